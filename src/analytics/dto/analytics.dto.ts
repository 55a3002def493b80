import { ApiProperty } from '@nestjs/swagger';
import { PERIODS } from '../analytics-window';

const RATE = 'Percent of emails_sent, rounded to 2 decimals; 0 when nothing was sent.';

/** The email counts of a window (docs/decisions.md, Analytics, defines each). */
export class EmailSummaryDto {
  @ApiProperty({
    example: 1200,
    description: 'Recipients the provider accepted (`sent` events; one for the whole message counts each recipient it went to).',
  })
  emails_sent: number;

  @ApiProperty({ example: 1180, description: '`delivered` events (provider events, per recipient).' })
  delivered: number;

  @ApiProperty({ example: 12, description: '`bounced` events: refused at RCPT, provider events, DSNs.' })
  bounced: number;

  @ApiProperty({ example: 1, description: '`complained` events (spam reports).' })
  complaints: number;

  @ApiProperty({ example: 540, description: 'Opens by people: every `opened` event not flagged machine.' })
  opens: number;

  @ApiProperty({ example: 130, description: 'Clicks by people: every `clicked` event not flagged machine.' })
  clicks: number;

  @ApiProperty({ example: 3, description: '`unsubscribed` events (one per message and address).' })
  unsubscribes: number;

  @ApiProperty({ example: 98.33, description: `delivered / emails_sent. ${RATE}` })
  delivery_rate: number;

  @ApiProperty({ example: 35, description: `unique_opens / emails_sent. ${RATE}` })
  open_rate: number;

  @ApiProperty({ example: 8.5, description: `unique_clicks / emails_sent. ${RATE}` })
  click_rate: number;

  @ApiProperty({ example: 420, description: 'Messages opened by a person, each counted once, in the hour of its first human open.' })
  unique_opens: number;

  @ApiProperty({ example: 610, description: 'Opens by machines: privacy proxies (Apple Mail), scanners, hits within seconds of sending.' })
  machine_opens: number;

  @ApiProperty({ example: 102, description: 'Messages clicked by a person, each counted once, in the hour of its first human click.' })
  unique_clicks: number;

  @ApiProperty({ example: 44, description: 'Clicks by machines: link scanners, hits within seconds of sending.' })
  machine_clicks: number;
}

export class EmailAnalyticsDto extends EmailSummaryDto {
  @ApiProperty({ enum: [...PERIODS, 'custom'], example: 'last_30_days', description: 'The period asked for; custom for from/to.' })
  period: string;

  @ApiProperty({ format: 'date-time', description: 'Start of the first hour counted (inclusive).' })
  from: string;

  @ApiProperty({ format: 'date-time', description: 'End of the last hour counted (exclusive).' })
  to: string;

  @ApiProperty({
    example: 25,
    description:
      'Messages the inbound SMTP server received for forwarding (one per forwarding domain of an SMTP transaction). ' +
      'What they became when forwarded counts in the fields above, as every message of the account does.',
  })
  forwarded: number;
}

export class FormCountsDto {
  @ApiProperty({ example: 'frm_4fQ2xY7bN1kLp0sT9uVw3a' })
  form_id: string;

  @ApiProperty({ example: 'Contact' })
  name: string;

  @ApiProperty({ example: 42, description: 'Submissions stored accepted or held (an instant form’s, waiting for its confirmation).' })
  submissions: number;

  @ApiProperty({ example: 7, description: 'Submissions blocked as spam (honeypot, content filter).' })
  spam_blocked: number;
}

export class FormsSummaryDto {
  @ApiProperty({ example: 42, description: 'Accepted and held submissions of every form.' })
  submissions: number;

  @ApiProperty({ example: 7, description: 'Submissions blocked as spam.' })
  spam_blocked: number;

  @ApiProperty({
    type: [FormCountsDto],
    description: 'Forms with a submission (or spam) in the window, most submissions first. A deleted form’s numbers go with it.',
  })
  by_form: FormCountsDto[];
}

export class ForwardingDomainCountsDto {
  @ApiProperty({ example: 'acme.com', description: 'The forwarding domain the message was received for.' })
  domain: string;

  @ApiProperty({ example: 20, description: 'Messages received for the domain.' })
  received: number;

  @ApiProperty({ example: 31, description: 'Their envelope recipients (RCPT TO) on the domain.' })
  recipients: number;
}

export class ForwardingSummaryDto {
  @ApiProperty({
    example: 25,
    description: 'Messages the inbound SMTP server received for forwarding (one per forwarding domain of an SMTP transaction).',
  })
  received: number;

  @ApiProperty({ example: 38, description: 'Their envelope recipients (RCPT TO), summed.' })
  recipients: number;

  @ApiProperty({
    type: [ForwardingDomainCountsDto],
    description: 'Domains that received mail in the window, most messages first. A deleted domain keeps the mail it received.',
  })
  by_domain: ForwardingDomainCountsDto[];
}

export class DailyAnalyticsDto {
  @ApiProperty({ example: '2026-11-23', description: 'A UTC date.' })
  date: string;

  @ApiProperty({ example: 40 })
  emails_sent: number;

  @ApiProperty({ example: 39 })
  delivered: number;

  @ApiProperty({ example: 0 })
  bounced: number;

  @ApiProperty({ example: 0 })
  complaints: number;

  @ApiProperty({ example: 18 })
  opens: number;

  @ApiProperty({ example: 4 })
  clicks: number;

  @ApiProperty({ example: 0 })
  unsubscribes: number;

  @ApiProperty({ example: 2 })
  submissions: number;

  @ApiProperty({ example: 0 })
  spam_blocked: number;

  @ApiProperty({ example: 3, description: 'Messages received for forwarding (forwarding.received of the day).' })
  forwarded: number;
}

export class AnalyticsOverviewDto {
  @ApiProperty({
    enum: [...PERIODS, 'custom'],
    example: 'last_30_days',
    description: 'The range asked for (a short name as its period: 7d → last_7_days); custom for from/to.',
  })
  range: string;

  @ApiProperty({ format: 'date-time', description: 'Start of the first hour counted (inclusive).' })
  from: string;

  @ApiProperty({ format: 'date-time', description: 'End of the last hour counted (exclusive).' })
  to: string;

  @ApiProperty({ type: EmailSummaryDto })
  email: EmailSummaryDto;

  @ApiProperty({ type: FormsSummaryDto })
  forms: FormsSummaryDto;

  @ApiProperty({ type: ForwardingSummaryDto })
  forwarding: ForwardingSummaryDto;

  @ApiProperty({
    type: [DailyAnalyticsDto],
    description: 'One row per UTC date the window touches, oldest first, days without activity included (zeros).',
  })
  daily: DailyAnalyticsDto[];
}
