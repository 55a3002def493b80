import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional } from 'class-validator';
import { ALTCHA_MAX_NUMBER, FORM_CHALLENGES, SPAM_PROTECTION_LEVELS } from '../form-settings';

/**
 * Form settings as the API shows and takes them. Their contents are checked by checkFormSettings (the one check
 * of every form, whichever route sets it), which names each bad path; @IsOptional only admits the property.
 */
export class FormAcknowledgmentDto {
  @ApiProperty({ example: true, description: 'Send the submitter an acknowledgment email' })
  enabled: boolean;

  @IsOptional()
  @ApiPropertyOptional({ example: 'contact-ack', description: 'Name of the template for the acknowledgment' })
  template?: string;

  @IsOptional()
  @ApiPropertyOptional({ example: 'Thanks, we got your message' })
  subject?: string;

  @IsOptional()
  @ApiPropertyOptional({
    example: 'hello@example.com',
    description:
      'Reply-To of the acknowledgment. Without it the acknowledgment has no Reply-To (it never shows the notification recipients)',
  })
  replyTo?: string;
}

export class FormSpamProtectionDto {
  @IsOptional()
  @ApiPropertyOptional({ enum: SPAM_PROTECTION_LEVELS, example: 'medium' })
  level?: string;

  @IsOptional()
  @ApiPropertyOptional({ example: '_service_honeypot', description: 'Hidden field that must stay empty' })
  honeypot?: string;

  @IsOptional()
  @ApiPropertyOptional({ example: 10, description: 'Submissions per hour per client IP' })
  rate_limit?: number;

  @IsOptional()
  @ApiPropertyOptional({ example: true, description: 'Block submissions that look like spam' })
  content_filter?: boolean;

  @IsOptional()
  @ApiPropertyOptional({
    enum: FORM_CHALLENGES,
    description:
      'A check every post must pass: altcha (our proof-of-work, GET /forms/{id}/challenge), turnstile or hcaptcha. Level high implies altcha.',
  })
  challenge?: string;

  @IsOptional()
  @ApiPropertyOptional({
    type: Number,
    minimum: ALTCHA_MAX_NUMBER.min,
    maximum: ALTCHA_MAX_NUMBER.max,
    default: ALTCHA_MAX_NUMBER.default,
    example: 250_000,
    description:
      'Difficulty of the altcha challenge: the upper bound of the secret number a browser searches for (half of it on ' +
      'average). Raising it takes effect at once: challenges issued at a lower difficulty are refused.',
  })
  altcha_maxnumber?: number;

  @IsOptional()
  @ApiPropertyOptional({
    type: String,
    nullable: true,
    writeOnly: true,
    example: '0x4AAAAAAA…',
    description:
      'The Turnstile or hCaptcha site secret (required with those challenges). Write-only: stored encrypted and never ' +
      'returned (responses show captcha_secret_set). In PATCH /api/forms/{id}, a spam_protection without it keeps the ' +
      'stored secret while the challenge stays the same provider; null removes it. Where a form is given whole ' +
      '(creation, PUT of a domain’s or collection’s forms, PUT /config) it is required with those challenges.',
  })
  captcha_secret?: string | null;

  @IsOptional()
  @ApiPropertyOptional({
    readOnly: true,
    example: true,
    description: 'Present (true) when a captcha_secret is stored. Ignored on input, so a form read can be sent back.',
  })
  captcha_secret_set?: boolean;

  @IsOptional()
  @ApiPropertyOptional({
    type: [String],
    maxItems: 200,
    example: ['ada@example.org', '@partner.example'],
    description:
      'Senders whose posts skip the content filter: an address, or every address of a domain (@partner.example), ' +
      'matched against the submission’s email field. The honeypots and the challenge still apply to them.',
  })
  allowlist?: string[];
}

export class FormSettingsDto {
  @IsOptional()
  @ApiPropertyOptional({ example: 'Contact form', description: 'Display name' })
  name?: string;

  @IsOptional()
  @ApiPropertyOptional({
    type: [String],
    example: ['team@example.com'],
    description:
      'Who gets the notification (at most 50). `to` (one address or a list) is accepted as an alias and stored as ' +
      'recipients. Required for collection forms; a domain form without it goes to the domain’s contactRecipients.',
  })
  recipients?: string[];

  @IsOptional()
  @ApiPropertyOptional({ example: 'New message from {{ form.name }}' })
  subject?: string;

  @IsOptional()
  @ApiPropertyOptional({ example: true, description: 'Reply-To of the notification is the submitter' })
  replies?: boolean;

  @IsOptional()
  @ApiPropertyOptional({ example: 'email', description: 'An address, or the submitted field that holds one' })
  replyTo?: string;

  @IsOptional()
  @ApiPropertyOptional({
    type: [String],
    example: ['sales@example.com'],
    description:
      'Addresses a post’s `_cc` field may copy the notification to (Cc), at most 50. A `_cc` address not listed here is ' +
      'ignored without an error: a visitor can change the form’s HTML, and the form must not mail whoever they name.',
  })
  ccAllowed?: string[];

  @IsOptional()
  @ApiPropertyOptional({ type: FormAcknowledgmentDto })
  acknowledgment?: FormAcknowledgmentDto;

  @IsOptional()
  @ApiPropertyOptional({ example: 'contact-notification', description: 'Template for the notification email' })
  template?: string;

  @IsOptional()
  @ApiPropertyOptional({ example: 20, description: 'Submissions per hour per client IP' })
  rateLimit?: number;

  @IsOptional()
  @ApiPropertyOptional({ type: FormSpamProtectionDto })
  spam_protection?: FormSpamProtectionDto;

  @IsOptional()
  @ApiPropertyOptional({
    type: [String],
    example: ['https://www.example.org', 'landing.example.net'],
    description: 'Origins or host names allowed to post without a credential, besides the account’s verified domains',
  })
  allowedOrigins?: string[];

  @IsOptional()
  @ApiPropertyOptional({ example: 'https://example.com/thanks', description: 'Where a browser goes after posting' })
  redirect?: string;

  @IsOptional()
  @ApiPropertyOptional({ type: [String], example: ['email', 'message'], description: 'Fields every submission must fill in' })
  requiredFields?: string[];

  @IsOptional()
  @ApiPropertyOptional({
    type: [String],
    example: ['iso', 'docm'],
    description:
      'Upload types refused by default because Gmail and Outlook refuse them (disk images, macro-enabled Office ' +
      'documents, OneNote, shortcuts, web archives, archives that cannot be inspected, …) that this form accepts, by ' +
      'extension, and pdf-javascript (PDFs that run JavaScript by themselves), encrypted-archive (zips holding encrypted ' +
      'files), unchecked-archive (zips holding files that cannot be checked). Programs and pages a browser runs are ' +
      'never accepted.',
  })
  allowedFileTypes?: string[];

  @IsOptional()
  @ApiPropertyOptional({
    example: { per_ip: { hourly: 5 }, messages: { ip_limited: 'Please try again in an hour.' } },
    type: 'object',
    additionalProperties: true,
    description:
      'Per-form rate_limiting block (per_ip, total_submissions, burst, messages, …), stored as given. Only ' +
      'messages.global_limited is applied: the message of the 429 when an account quota refuses a post to this form. ' +
      'The per-IP limit of posts is rateLimit.',
  })
  rate_limiting?: Record<string, unknown>;
}
