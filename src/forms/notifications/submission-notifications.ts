import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { MessageStatus } from '../../outbox/message.entity';
import type { SuppressionEntry } from '../../suppression/suppression-entry.entity';
import { SuppressionService } from '../../suppression/suppression.service';
import type { Form } from '../form.entity';
import type { FormSubmission } from '../form-submission.entity';
import { notificationMessageIdsOf, notificationOf, type NotificationMessage, type SubmissionNotification } from './notification-state';

/** The last bounce or failure of message `m` that is its own (message_event_own_failure, of the migration that keeps them). */
const FAILURE_OF_MESSAGE = `
  SELECT x.type, x.recipient, x.detail FROM message_events x
  WHERE x.message_id = m.id AND x.type IN ('bounced', 'failed') AND message_event_own_failure(x.type, x.recipient, x.detail)
  ORDER BY x.occurred_at DESC, x.id DESC LIMIT 1`;

/**
 * `notification=undelivered` of a listing: accepted submissions whose notification notificationOf tells held,
 * bounced, failed or not sent (no message, or only messages that found every recipient suppressed, and none held).
 */
export function undeliveredNotificationCondition(alias: string): string {
  const ids = `COALESCE(${alias}.notification_message_ids, jsonb_build_array(${alias}.message_ids -> 0))`;
  const messages = `SELECT 1 FROM messages m WHERE m.id IN (SELECT jsonb_array_elements_text(${ids}))`;
  return (
    `(${alias}.status = 'accepted' AND (${alias}.notification_held IS NOT NULL` +
    ` OR jsonb_array_length(COALESCE(${alias}.notification_message_ids, ${alias}.message_ids)) = 0` +
    ` OR EXISTS (${messages} AND EXISTS (${FAILURE_OF_MESSAGE}))` +
    ` OR (EXISTS (${messages}) AND NOT EXISTS (${messages} AND m.status <> 'failed'))))`
  );
}

/** The notification recipients of a form: its own, else its domain's contact recipients. */
export function notificationRecipientsOf(form: Pick<Form, 'settings' | 'domain'>): string[] {
  return form.settings.recipients ?? form.domain?.settings.contactRecipients ?? [];
}

/** What listings show of notifications: each submission's, and each form's suppressed recipients (one query a page each). */
@Injectable()
export class SubmissionNotifications {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly suppression: SuppressionService,
  ) {}

  /** The notification of each submission of a page, by submission id. */
  async ofPage(accountId: string, submissions: FormSubmission[]): Promise<Map<string, SubmissionNotification>> {
    const ids = submissions.filter((s) => s.status === 'accepted').flatMap(notificationMessageIdsOf);
    const rows: {
      id: string;
      status: MessageStatus;
      type: 'bounced' | 'failed' | null;
      recipient: string | null;
      detail: string | null;
    }[] =
      ids.length === 0
        ? []
        : await this.dataSource.query(
            `SELECT m.id, m.status, f.type, f.recipient, f.detail FROM messages m LEFT JOIN LATERAL (${FAILURE_OF_MESSAGE}) f ON true
             WHERE m.account_id = $1 AND m.id = ANY($2::varchar[])`,
            [accountId, ids],
          );
    const messages = new Map<string, NotificationMessage>(
      rows.map((row) => [
        row.id,
        { id: row.id, status: row.status, failure: row.type && { type: row.type, recipient: row.recipient, detail: row.detail } },
      ]),
    );
    return new Map(submissions.map((s) => [s.id, notificationOf(s, messages)]));
  }

  /** Each form's notification recipients on its account's suppression list now, by form id (the forms of one account). */
  async suppressedRecipients(forms: Pick<Form, 'id' | 'accountId' | 'settings' | 'domain'>[]): Promise<Map<string, SuppressionEntry[]>> {
    if (forms.length === 0) return new Map();
    const recipients = new Map(forms.map((form) => [form.id, notificationRecipientsOf(form).map((address) => address.toLowerCase())]));
    const entries = await this.suppression.entriesAmong(forms[0].accountId, [...recipients.values()].flat());
    const byEmail = new Map(entries.map((entry) => [entry.email, entry]));
    return new Map(forms.map((form) => [form.id, recipients.get(form.id)!.flatMap((address) => byEmail.get(address) ?? [])]));
  }
}
