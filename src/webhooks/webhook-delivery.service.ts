import { Injectable, Logger } from '@nestjs/common';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { DataSource } from 'typeorm';
import { SecretBox } from '../common/crypto/secret-box';
import { AppConfigService } from '../config/app-config.service';
import type { DeliveryStatus } from './webhook-delivery.entity';
import { postWebhook } from './webhook-http';
import { TargetRefused, WebhookTargets } from './webhook-targets';
import { WebhookQueue } from './webhook.queue';

interface DeliveryRow {
  id: string;
  event_id: string;
  payload: Record<string, unknown>;
  status: DeliveryStatus;
  attempts: number;
  round_first_attempt: number;
  url: string;
  enabled: boolean;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
}

interface AttemptOutcome {
  statusCode: number | null;
  error: string | null;
  response: string | null;
  succeeded: boolean;
  /** No retry can help (the webhook is disabled). */
  final?: boolean;
}

const USER_AGENT = 'Mailroom-Webhooks/1';

/**
 * One attempt of a webhook delivery (D-23): the Standard Webhooks request to the checked address, the attempt
 * written with the delivery's new state in one statement, and the next attempt's job when the schedule has one.
 */
@Injectable()
export class WebhookDeliveryService {
  private readonly logger = new Logger(WebhookDeliveryService.name);

  constructor(
    private readonly dataSource: DataSource,
    private readonly secrets: SecretBox,
    private readonly targets: WebhookTargets,
    private readonly webhookQueue: WebhookQueue,
    private readonly config: AppConfigService,
  ) {}

  async attempt(deliveryId: string, attempt: number): Promise<void> {
    const [delivery]: DeliveryRow[] = await this.dataSource.query(
      `SELECT d.id, d.event_id, d.payload, d.status, d.attempts, d.round_first_attempt,
              w.url, w.enabled, w.secret, w.previous_secret, w.previous_secret_expires_at
       FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
       WHERE d.id = $1`,
      [deliveryId],
    );
    // Gone with its webhook, or this attempt was made already (a job run twice).
    if (!delivery || delivery.status !== 'pending' || delivery.attempts !== attempt - 1) return;

    const startedAt = new Date();
    const outcome = delivery.enabled
      ? await this.send(delivery)
      : { statusCode: null, error: 'the webhook is disabled', response: null, succeeded: false, final: true };
    const durationMs = Date.now() - startedAt.getTime();

    const wait = outcome.succeeded || outcome.final ? null : this.webhookQueue.retrySchedule.waitAfter(attempt - delivery.round_first_attempt + 1);
    const status: DeliveryStatus = outcome.succeeded ? 'succeeded' : wait === null ? 'failed' : 'pending';
    const nextAttemptAt = wait === null ? null : new Date(Date.now() + wait);
    const rows: unknown[] = await this.dataSource.query(
      `WITH moved AS (
         UPDATE webhook_deliveries SET status = $3, attempts = $2, next_attempt_at = $4, last_status_code = $5, updated_at = now()
         WHERE id = $1 AND status = 'pending' AND attempts = $2 - 1
         RETURNING id
       )
       INSERT INTO webhook_attempts (delivery_id, attempt, started_at, duration_ms, status_code, error, response, succeeded)
       SELECT id, $2, $6::timestamptz, $7::int, $5, $8::text, $9::text, $10::boolean FROM moved
       RETURNING id`,
      [deliveryId, attempt, status, nextAttemptAt, outcome.statusCode, startedAt, durationMs, outcome.error, outcome.response, outcome.succeeded],
    );
    if (rows.length === 0 || wait === null) return;
    try {
      await this.webhookQueue.add([{ deliveryId, attempt: attempt + 1, delayMs: wait }]);
    } catch (err) {
      this.logger.warn(`Could not queue attempt ${attempt + 1} of ${deliveryId}, the sweeper will: ${(err as Error).message}`);
    }
  }

  private async send(delivery: DeliveryRow): Promise<AttemptOutcome> {
    const timeoutMs = this.config.env.WEBHOOK_TIMEOUT_MS;
    const signal = AbortSignal.timeout(timeoutMs);
    try {
      const url = new URL(delivery.url);
      const addresses = await this.targets.addressesOf(url, signal);
      const body = JSON.stringify({ id: delivery.event_id, type: delivery.payload.type, timestamp: delivery.payload.timestamp, ...delivery.payload });
      const answer = await postWebhook(url, body, this.headers(delivery, body), addresses, signal);
      if (signal.aborted) throw signal.reason;
      const succeeded = answer.statusCode >= 200 && answer.statusCode < 300;
      const error = succeeded ? null : `HTTP ${answer.statusCode}${answer.statusCode >= 300 && answer.statusCode < 400 ? ': redirects are not followed' : ''}`;
      return { statusCode: answer.statusCode, error, response: storable(answer.excerpt), succeeded };
    } catch (err) {
      if (signal.aborted) return failure(`no answer within ${timeoutMs} ms`);
      if (err instanceof TargetRefused) return failure(err.message);
      return failure((err as Error).message || String(err));
    }
  }

  /** Standard Webhooks headers; while a rotated-out secret is still valid, both secrets sign (space-separated). */
  private headers(delivery: DeliveryRow, body: string): Record<string, string> {
    const now = new Date();
    const secrets = [this.secrets.open(delivery.secret)];
    if (delivery.previous_secret && delivery.previous_secret_expires_at && delivery.previous_secret_expires_at > now) {
      secrets.push(this.secrets.open(delivery.previous_secret));
    }
    return {
      'content-type': 'application/json',
      'user-agent': USER_AGENT,
      'webhook-id': delivery.event_id,
      'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
      'webhook-signature': secrets.map((secret) => new StandardWebhook(secret).sign(delivery.event_id, now, body)).join(' '),
    };
  }
}

function failure(error: string): AttemptOutcome {
  return { statusCode: null, error, response: null, succeeded: false };
}

/** PostgreSQL text cannot hold NUL. */
function storable(text: string): string | null {
  return text === '' ? null : text.replace(/\u0000/g, '');
}
