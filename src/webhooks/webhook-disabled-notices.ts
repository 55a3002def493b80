import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AppConfigService } from '../config/app-config.service';
import { type ComposedEmail, type Mailbox, OutboxService } from '../outbox/outbox.service';
import { textToHtml } from '../forms/emails/html-text';
import type { WebhookDisabledReason } from './webhook.entity';
import { GONE_DETAIL } from './webhook-endpoint-health';

const PAGE = 50;

export interface DisabledWebhook {
  id: string;
  account_id: string;
  account_name: string;
  url: string;
  disabled_reason: WebhookDisabledReason;
  disabled_at: Date;
  failing_since: Date | null;
  /** The billing customer's email: the one address an account has on record. */
  contact: string | null;
}

/** The email telling an account that Mailroom disabled one of its webhooks, and what to do about it. */
export function disabledNoticeEmail(webhook: DisabledWebhook, from: Mailbox, publicUrl: string): ComposedEmail {
  const url = webhook.url.replace(/[?#].*$/, '');
  const why =
    webhook.disabled_reason === 'gone'
      ? `${GONE_DETAIL}, which asks to be sent nothing more.`
      : `Every attempt to deliver to it failed since ${webhook.failing_since?.toISOString() ?? 'long ago'}.`;
  const since = (webhook.failing_since ?? webhook.disabled_at).toISOString();
  const text = [
    `Mailroom disabled the webhook ${webhook.id} of ${webhook.account_name} at ${webhook.disabled_at.toISOString()}:`,
    '',
    url,
    '',
    why,
    '',
    'Nothing more is sent to it; events meanwhile are not delivered to it. Once the endpoint works again, enable the webhook',
    `(PATCH ${publicUrl}/email/webhooks/${webhook.id} with {"enabled": true}) and deliver again what failed`,
    `(POST ${publicUrl}/email/webhooks/${webhook.id}/recover with {"since": "${since}"}).`,
  ].join('\n');
  return {
    from: { name: from.name || 'Mailroom', address: from.address },
    systemSender: true,
    to: [webhook.contact!],
    subject: `Webhook disabled: ${url}`.slice(0, 200),
    text,
    html: `<p>${textToHtml(text).replace(/<br><br>/g, '</p><p>')}</p>`,
  };
}

/**
 * Emails the account's contact about each webhook Mailroom disabled (workers). The disable marks the webhook
 * (disabled_notice_pending, in the statement that disabled it); here the email is accepted in the transaction that
 * claims the mark (the row locked, SKIP LOCKED) and clears it, so it is sent once and never lost, however many runs
 * or instances overlap. Not counted against the account's email quota: an account over it is told all the same.
 * Without a billing customer there is nobody to email: a warning is logged, and the `webhook.disabled` event and the
 * webhook's own state still say it.
 */
@Injectable()
export class WebhookDisabledNotices implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(WebhookDisabledNotices.name);
  private timer?: NodeJS.Timeout;
  private running?: Promise<unknown>;

  constructor(
    private readonly dataSource: DataSource,
    private readonly outbox: OutboxService,
    private readonly config: AppConfigService,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => {
      if (this.running) return;
      this.running = this.sendDue()
        .catch((err: Error) => this.logger.warn(`Sending webhook-disabled emails failed: ${err.message}`))
        .finally(() => (this.running = undefined));
    }, this.config.env.WEBHOOK_POLL_INTERVAL_MS);
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  /** Sends the due notices, a page at a time; answers how many this run claimed (a concurrent run takes the others). */
  async sendDue(): Promise<number> {
    const due: DisabledWebhook[] = await this.dataSource.query(
      `SELECT w.id, w.account_id, a.name AS account_name, w.url, w.disabled_reason, w.disabled_at, w.failing_since, c.email AS contact
       FROM webhooks w JOIN accounts a ON a.id = w.account_id LEFT JOIN billing_customers c ON c.account_id = w.account_id
       WHERE w.disabled_notice_pending ORDER BY w.disabled_at LIMIT $1`,
      [PAGE],
    );
    let claimed = 0;
    for (const webhook of due) {
      const sent = await this.notify(webhook).catch((err: Error) => {
        this.logger.warn(`Webhook ${webhook.id}: its disable email failed: ${err.message}`);
        return false;
      });
      if (sent) claimed++;
    }
    return claimed;
  }

  /** Claims the webhook's mark and, in the same commit, accepts its email; false when another run claimed it first. */
  private async notify(webhook: DisabledWebhook): Promise<boolean> {
    // Composed before the transaction: it reads on its own connection, and the transaction holds one.
    const message = webhook.contact
      ? await this.outbox.compose(webhook.account_id, disabledNoticeEmail(webhook, this.config.formsFrom, this.config.publicUrl))
      : null;
    const claimed = await this.dataSource.transaction(async (manager) => {
      const rows: unknown[] = await manager.query(
        'SELECT id FROM webhooks WHERE id = $1 AND disabled_notice_pending FOR UPDATE SKIP LOCKED',
        [webhook.id],
      );
      if (rows.length === 0) return false;
      if (message) await this.outbox.acceptWithin(manager, { messages: [message], metering: null });
      await manager.query('UPDATE webhooks SET disabled_notice_pending = false WHERE id = $1', [webhook.id]);
      return true;
    });
    if (!claimed) return false;
    if (!webhook.contact) {
      this.logger.warn(`Webhook ${webhook.id} of account ${webhook.account_id} was disabled; the account has no billing contact to email`);
    }
    if (message) this.outbox.queueDelivery(message.message);
    return true;
  }
}
