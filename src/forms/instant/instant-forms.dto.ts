import { ApiProperty } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsEmail, IsString, Length, ValidateNested } from 'class-validator';

/** D-14: at most this many forms per batch. */
export const MAX_INSTANT_BATCH = 50;

export class CreateInstantFormDto {
  @ApiProperty({ example: 'Landing page', maxLength: 200 })
  @IsString()
  @Length(1, 200)
  name: string;

  @ApiProperty({ example: 'owner@example.org', description: 'Gets the submissions, once it confirmed by the emailed link' })
  @IsEmail({}, { message: 'email must be an email address' })
  email: string;
}

export class CreateInstantFormBatchDto {
  @ApiProperty({ type: [CreateInstantFormDto], maxItems: MAX_INSTANT_BATCH })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(MAX_INSTANT_BATCH)
  @ValidateNested({ each: true })
  @Type(() => CreateInstantFormDto)
  forms: CreateInstantFormDto[];
}
