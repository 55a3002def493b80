import { ApiProperty, ApiPropertyOptional, OmitType } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsBoolean, IsIn, IsOptional, IsString, Length } from 'class-validator';
import { PageQueryDto } from '../../common/http/page-query.dto';
import type { Form, FormKind } from '../form.entity';
import { SUBMISSION_STATUSES, type FormSubmission, SubmissionStatus } from '../form-submission.entity';
import { SubmissionNotificationDto, SuppressedRecipientDto } from '../notifications/notification.dto';
import { publicFormSettings } from '../spam/captcha-secret';
import { FormSettingsDto } from './form-settings.dto';

/** POST /api/forms: name, to and subject as the spec shows, plus any setting of the configuration file. */
export class CreateFormDto extends OmitType(FormSettingsDto, ['name'] as const) {
  @ApiProperty({ example: 'Contact form', maxLength: 200 })
  @IsString()
  @Length(1, 200)
  name: string;

  @ApiPropertyOptional({
    oneOf: [
      { type: 'string', format: 'email' },
      { type: 'array', items: { type: 'string', format: 'email' } },
    ],
    example: 'team@example.com',
    description: 'Who gets the notification: an address or a list (stored as recipients). Required unless recipients is given.',
  })
  @IsOptional()
  to?: unknown;
}

/**
 * PATCH /api/forms/{id}: a setting given replaces the stored one, null removes it, an absent one is kept. Inside a
 * spam_protection given, an absent captcha_secret keeps the stored one (same provider) and null removes it.
 */
export class UpdateFormDto extends FormSettingsDto {
  @ApiPropertyOptional({ oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }], example: 'team@example.com' })
  @IsOptional()
  to?: unknown;
}

const KINDS: FormKind[] = ['domain', 'collection', 'standalone', 'instant'];

/** A form (spec "Form": id, name, submissions, created_at), with where it lives and its settings. */
export class FormDto {
  @ApiProperty({ example: 'frm_3xVb9QmT0kLw2sZr8NcY1p' })
  id: string;

  @ApiProperty({ example: 'Contact form' })
  name: string;

  @ApiProperty({ example: 12, description: 'Submissions received, spam included' })
  submissions: number;

  @ApiProperty({ enum: KINDS, description: 'Under a domain, in a collection, stand-alone, or an instant form' })
  kind: FormKind;

  @ApiProperty({ type: String, nullable: true, example: 'example.com' })
  domain: string | null;

  @ApiProperty({ type: String, nullable: true, example: 'website', description: 'Slug of the collection' })
  collection: string | null;

  @ApiProperty({ type: String, nullable: true, example: 'contact', description: 'Slug under the domain or collection' })
  slug: string | null;

  @ApiProperty({ example: 'http://localhost:3000/f/frm_3xVb9QmT0kLw2sZr8NcY1p', description: 'Where browsers post' })
  submitUrl: string;

  @ApiProperty({ description: 'False until the recipient of an instant form confirms it' })
  confirmed: boolean;

  @ApiProperty({ type: FormSettingsDto, description: 'Without the CAPTCHA secret: spam_protection.captcha_secret_set says one is stored' })
  settings: FormSettingsDto;

  @ApiProperty({
    type: [SuppressedRecipientDto],
    description:
      'Notification recipients (the form’s, or its domain’s contactRecipients) on the suppression list now: their ' +
      'notifications are held on the submissions, and sent once the address is taken off (DELETE /email/suppression/{email})',
  })
  suppressedRecipients: SuppressedRecipientDto[];

  @ApiProperty({ format: 'date-time' })
  created_at: string;

  @ApiProperty({ format: 'date-time' })
  updated_at: string;

  static from(form: Form, submissions: number, publicUrl: string, suppressedRecipients: SuppressedRecipientDto[] = []): FormDto {
    return {
      id: form.id,
      name: form.name,
      submissions,
      kind: form.kind,
      domain: form.domain?.name ?? null,
      collection: form.collection?.slug ?? null,
      slug: form.slug,
      submitUrl: submitUrlOf(form, publicUrl),
      confirmed: form.confirmedAt !== null,
      settings: publicFormSettings(form.settings),
      suppressedRecipients,
      created_at: form.createdAt.toISOString(),
      updated_at: form.updatedAt.toISOString(),
    };
  }
}

/** The address browsers post to: the form's own path under its domain or collection, else /f/{id}. */
export function submitUrlOf(form: Form, publicUrl: string): string {
  if (form.domain && form.slug) return `${publicUrl}/${form.domain.name}/${form.slug}`;
  if (form.collection && form.slug) return `${publicUrl}/c/${form.collection.slug}/${form.slug}`;
  return `${publicUrl}/f/${form.id}`;
}

export class FormListDto {
  @ApiProperty({ type: [FormDto] })
  forms: FormDto[];

  @ApiProperty({ example: 1 })
  count: number;
}

export class ListSubmissionsQueryDto extends PageQueryDto {
  @ApiPropertyOptional({ enum: SUBMISSION_STATUSES, description: 'Only submissions with this status' })
  @IsOptional()
  @IsIn(SUBMISSION_STATUSES, { message: `status must be one of ${SUBMISSION_STATUSES.join(', ')}` })
  status?: SubmissionStatus;

  @ApiPropertyOptional({
    type: Boolean,
    description:
      'true: the spam folder, only submissions blocked as spam (each with its spamReason; POST …/not-spam releases one); ' +
      'false: every submission but spam',
  })
  @IsOptional()
  @Transform(({ value }: { value: unknown }) => (value === 'true' ? true : value === 'false' ? false : value))
  @IsBoolean({ message: 'spam must be true or false' })
  spam?: boolean;

  @ApiPropertyOptional({
    enum: ['undelivered'],
    description:
      'undelivered: only submissions whose notification did not reach the owner: held for a suppressed recipient ' +
      '(sent once the suppression is lifted), bounced or failed; see each one’s notification',
  })
  @IsOptional()
  @IsIn(['undelivered'], { message: 'notification must be undelivered' })
  notification?: 'undelivered';

  @ApiPropertyOptional({
    enum: ['json', 'csv'],
    default: 'json',
    description:
      'csv: every submission as a spreadsheet, streamed; the form’s requiredFields and most frequent field names get ' +
      'columns, the other fields of a row go to other_fields as JSON',
  })
  @IsOptional()
  @IsIn(['json', 'csv'], { message: 'format must be json or csv' })
  format?: 'json' | 'csv';
}

export class SubmittedFileDto {
  @ApiProperty({ example: 'cv' })
  field: string;

  @ApiProperty({ example: 'cv.pdf' })
  filename: string;

  @ApiProperty({ example: 'application/pdf' })
  contentType: string;

  @ApiProperty({ example: 48213 })
  size: number;
}

export class SubmissionDto {
  @ApiProperty({ example: 'sub_7Hq2Lr9XwT4mPz1Vb8Ks3N' })
  id: string;

  @ApiProperty({ example: 'frm_3xVb9QmT0kLw2sZr8NcY1p' })
  formId: string;

  @ApiProperty({
    enum: SUBMISSION_STATUSES,
    description: 'accepted (emails queued), spam (blocked, nothing sent), held (waits for an instant form’s confirmation)',
  })
  status: SubmissionStatus;

  @ApiProperty({ type: String, nullable: true, example: null })
  spamReason: string | null;

  @ApiProperty({
    type: 'object',
    additionalProperties: { oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }] },
    example: { name: 'Ada', email: 'ada@example.org', message: 'Hello' },
  })
  fields: Record<string, string | string[]>;

  @ApiProperty({ type: [SubmittedFileDto] })
  files: SubmittedFileDto[];

  @ApiProperty({
    example: ['msg_2Vh7Qm9LrX4tKp1Zb8Ns3W'],
    type: [String],
    description: 'The notification and acknowledgment: see GET /email/status/{messageId}',
  })
  messageIds: string[];

  @ApiProperty({ type: SubmissionNotificationDto, description: 'What became of the notification to the form’s owner' })
  notification: SubmissionNotificationDto;

  @ApiProperty({ type: String, nullable: true, example: '203.0.113.7' })
  ip: string | null;

  @ApiProperty({
    example: 'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 Safari/605.1.15',
    type: String,
    nullable: true,
  })
  userAgent: string | null;

  @ApiProperty({ type: String, nullable: true, example: 'https://www.example.com' })
  origin: string | null;

  @ApiProperty({ format: 'date-time' })
  created_at: string;

  static readonly from = (s: FormSubmission, notification: SubmissionNotificationDto): SubmissionDto => {
    return {
      id: s.id,
      formId: s.formId,
      status: s.status,
      spamReason: s.spamReason,
      fields: s.fields,
      files: s.files,
      messageIds: s.messageIds,
      notification,
      ip: s.ip,
      userAgent: s.userAgent,
      origin: s.origin,
      created_at: s.createdAt.toISOString(),
    };
  };
}

export class SubmissionPageDto {
  @ApiProperty({ type: [SubmissionDto] })
  submissions: SubmissionDto[];

  @ApiProperty({
    example: 1,
    description: 'Submissions matching the filter in all pages, as counted for the first page: the following pages repeat that figure',
  })
  total: number;

  @ApiProperty({
    example: 'WyIyMDI2LTA2LTA5VDEwOjAwOjAwLjAwMFoiLCJzdWJfMSIsMSwielU4bWFlWDciXQ',
    type: String,
    nullable: true,
    description: 'Pass as cursor for the next page; null on the last page',
  })
  nextCursor: string | null;
}
