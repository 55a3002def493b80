import { ApiProperty } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import type { ConfirmationView } from './confirmation-view';
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

/** The answer to a confirmation posted by a client that asks for JSON. */
export class InstantFormConfirmationDto {
  @ApiProperty({ example: 'frm_3KQ9' })
  formId: string;

  @ApiProperty({ example: 'Landing page' })
  name: string;

  @ApiProperty({
    enum: ['confirmed', 'already_confirmed'],
    description:
      '`confirmed`: this request confirmed the form and releases its held submissions; `already_confirmed`: it was before, nothing is sent again',
  })
  state: 'confirmed' | 'already_confirmed';

  @ApiProperty({
    example: 3,
    description: 'Held submissions this confirmation releases (sent in pages of 50, oldest first); 0 when already confirmed',
  })
  released: number;

  @ApiProperty({
    example: 0,
    description: 'Of those, how many wait for room in the account’s email quota: they are sent on their own once it has room',
  })
  waitingForQuota: number;

  @ApiProperty({ type: String, format: 'date-time', nullable: true, example: null, description: 'When that quota has room again' })
  quotaResetAt: string | null;

  static from(view: Extract<ConfirmationView, { state: 'confirmed' | 'already' }>): InstantFormConfirmationDto {
    const confirmed = view.state === 'confirmed';
    return {
      formId: view.form.id,
      name: view.form.name,
      state: confirmed ? 'confirmed' : 'already_confirmed',
      released: confirmed ? view.held - view.waiting : 0,
      waitingForQuota: confirmed ? view.waiting : 0,
      quotaResetAt: confirmed ? (view.waitingUntil?.toISOString() ?? null) : null,
    };
  }
}
