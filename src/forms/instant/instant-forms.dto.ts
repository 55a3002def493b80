import { ApiProperty } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsEmail, IsString, Length, ValidateNested } from 'class-validator';
import { type ConfirmationView, pendingOf } from './confirmation-view';

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
    example: 120,
    description:
      'Submissions held when this request confirmed the form, all released oldest first in pages of 50; 0 when already confirmed',
  })
  held: number;

  @ApiProperty({
    example: 50,
    description:
      'Of those, how many were committed for sending before this answer (the first page). One whose notification could not be made ' +
      'is not counted: it stays held and is tried again later',
  })
  sentNow: number;

  @ApiProperty({
    example: 70,
    description:
      'The others (held − sentNow): sent in the background, page after page, as far as the account’s email quota has room; what it ' +
      'has no room for waits, held, and goes out on its own once it has',
  })
  pending: number;

  @ApiProperty({
    example: false,
    description: 'The account’s email quota already refused some of the held submissions: the pending ones wait for it (quotaResetAt)',
  })
  waitingForQuota: boolean;

  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    example: null,
    description: 'When waitingForQuota, when that quota has room again (if it said); else null',
  })
  quotaResetAt: string | null;

  static from(view: Extract<ConfirmationView, { state: 'confirmed' | 'already' }>): InstantFormConfirmationDto {
    const confirmed = view.state === 'confirmed';
    return {
      formId: view.form.id,
      name: view.form.name,
      state: confirmed ? 'confirmed' : 'already_confirmed',
      held: confirmed ? view.held : 0,
      sentNow: confirmed ? view.sentNow : 0,
      pending: confirmed ? pendingOf(view) : 0,
      waitingForQuota: confirmed && view.waitingForQuota,
      quotaResetAt: confirmed ? (view.quotaResetAt?.toISOString() ?? null) : null,
    };
  }
}
