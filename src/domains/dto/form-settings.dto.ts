import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { SPAM_PROTECTION_LEVELS } from '../domain-settings';

/** Swagger shapes of form settings. Validation is done by the service, which names the bad path. */
export class FormAcknowledgmentDto {
  @ApiProperty({ example: true, description: 'Send the submitter an acknowledgment email' })
  enabled: boolean;

  @ApiPropertyOptional({ example: 'contact-ack', description: 'Name of the template for the acknowledgment' })
  template?: string;

  @ApiPropertyOptional({ example: 'Thanks, we got your message' })
  subject?: string;
}

export class FormSpamProtectionDto {
  @ApiPropertyOptional({ enum: SPAM_PROTECTION_LEVELS, example: 'medium' })
  level?: string;

  @ApiPropertyOptional({ example: '_service_honeypot', description: 'Hidden field that must stay empty' })
  honeypot?: string;

  @ApiPropertyOptional({ example: 10, description: 'Submissions per hour per client IP' })
  rate_limit?: number;

  @ApiPropertyOptional({ example: true, description: 'Block submissions that look like spam' })
  content_filter?: boolean;
}

export class FormSettingsDto {
  @ApiPropertyOptional({ example: 'Contact form', description: 'Display name' })
  name?: string;

  @ApiPropertyOptional({
    type: [String],
    example: ['team@example.com'],
    description:
      'Who gets the notification (at most 50). `to` (one address or a list) is accepted as an alias and stored as ' +
      'recipients. Required for collection forms; a domain form without it goes to the domain’s contactRecipients.',
  })
  recipients?: string[];

  @ApiPropertyOptional({ example: 'New message from {{ form.name }}' })
  subject?: string;

  @ApiPropertyOptional({ example: true, description: 'Reply-To of the notification is the submitter' })
  replies?: boolean;

  @ApiPropertyOptional({ example: 'email', description: 'An address, or the submitted field that holds one' })
  replyTo?: string;

  @ApiPropertyOptional({ type: FormAcknowledgmentDto })
  acknowledgment?: FormAcknowledgmentDto;

  @ApiPropertyOptional({ example: 'contact-notification', description: 'Template for the notification email' })
  template?: string;

  @ApiPropertyOptional({ example: 20, description: 'Submissions per hour per client IP' })
  rateLimit?: number;

  @ApiPropertyOptional({ type: FormSpamProtectionDto })
  spam_protection?: FormSpamProtectionDto;

  @ApiPropertyOptional({
    type: [String],
    example: ['https://www.example.org', 'landing.example.net'],
    description: 'Origins or host names allowed to post without a credential, besides the account’s verified domains',
  })
  allowedOrigins?: string[];

  @ApiPropertyOptional({ example: 'https://example.com/thanks', description: 'Where a browser goes after posting' })
  redirect?: string;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    description: 'The spec’s per-form rate_limiting block (per_ip, total_submissions, burst, …), kept as given',
  })
  rate_limiting?: Record<string, unknown>;
}
