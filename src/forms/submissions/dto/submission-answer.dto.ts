import { ApiProperty } from '@nestjs/swagger';

/** What a form post answers a JSON client (D-25); /submit/{form} always answers this. */
export class SubmissionAnswerDto {
  @ApiProperty({ example: true })
  success: true;

  @ApiProperty({ example: 'Thank you! Your submission has been received.' })
  message: string;

  @ApiProperty({ example: 'sub_7Hq2Lr9XwT4mPz1Vb8Ks3N' })
  submissionId: string;
}
