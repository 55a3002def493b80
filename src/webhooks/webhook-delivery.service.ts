import { Injectable, Logger } from '@nestjs/common';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { DataSource } from 'typeorm';
import { SecretBox, SecretBoxError } from '../common/crypto/secret-box';
import { allFulfilled, MicroBatch, settle } from '../common/micro-batch';
import { AppConfigService } from '../config/app-config.service';
import { webhookAttempts } from '../metrics/metrics';
import type { DeliveryStatus } from './webhook-delivery.entity';
import { endpointHealthCtes, GONE } from './webhook-endpoint-health';
import { postWebhook } from './webhook-http';
import { parseRetryAfter } from './webhook-retry-schedule';
import { TargetRefused, WebhookTargets } from './webhook-targets';
import { webhookBody } from './webhook-thin-event';
import { WebhookQueue } from './webhook.queue';

interface DeliveryRow {
  id: string;
  event_id: string;
  payload: Record<string, unknown>;
  status: DeliveryStatus;
  attempts: number;
  round_first_attempt: number;
  /** As text (every microsecond): the write tells by it whether a replay changed the delivery since. */
  updated_at: string;
  url: string;
  enabled: boolean;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
}

export interface AttemptOutcome {
  statusCode: number | null;
  error: string | null;
  response: string | null;
  succeeded: boolean;
  /** The answer's Retry-After, as a wait in ms. */
  retryAfterMs?: number | null;
  /** No retry can help (the webhook is disabled). */
  final?: boolean;
  /** Not the endpoint's failure (Mailroom could not sign, or the webhook is disabled): left out of its health. */
  blameless?: boolean;
}

/** An attempt's log row and the delivery's new state. */
interface AttemptResult {
  deliveryId: string;
  attempt: number;
  /** The delivery's updated_at when it was loaded for this attempt. */
  loadedAt: string;
  status: DeliveryStatus;
  nextAttemptAt: Date | null;
  /** Another attempt can help (it neither succeeded nor was final). */
  retryable: boolean;
  statusCode: number | null;
  startedAt: Date;
  durationMs: number;
  error: string | null;
  response: string | null;
  succeeded: boolean;
  /** The URL called: the endpoint's health is only kept while the webhook still has it. */
  url: string;
  blameless: boolean;
}

/** A delivery as an attempt's write left it. */
interface Written {
  status: DeliveryStatus;
  /** Greater than the attempt when a replay came while it was in flight: the next attempt is due now. */
  roundFirstAttempt: number;
}

/** In an attempt's write: a replay came while it was in flight, and another attempt can help (write). */
const REPLAYED = 'i.retryable AND d.updated_at IS DISTINCT FROM i.loaded_at::timestamptz';

const USER_AGENT = 'Mailroom-Webhooks/1';
/** Concurrent attempts share their loads and their writes: one statement each per batch. */
const MAX_BATCH = 200;
const MAX_CONCURRENT_BATCHES = 2;
const MAX_SIGNERS = 1000;

/**
 * One attempt of a webhook delivery (D-23): the Standard Webhooks request to the checked address, the attempt
 * written with the delivery's new state in one statement, and the next attempt's job when the schedule has one.
 */
@Injectable()
export class WebhookDeliveryService {
  private readonly logger = new Logger(WebhookDeliveryService.name);
  private readonly loads = new MicroBatch<string, DeliveryRow | null>((ids) => this.load(ids), MAX_BATCH, MAX_CONCURRENT_BATCHES);
  private readonly results = new MicroBatch<AttemptResult, Written | null>(
    (results) => this.writeResults(results),
    MAX_BATCH,
    MAX_CONCURRENT_BATCHES,
  );
  private readonly signers = new Map<string, StandardWebhook>();

  constructor(
    private readonly dataSource: DataSource,
    private readonly secrets: SecretBox,
    private readonly targets: WebhookTargets,
    private readonly webhookQueue: WebhookQueue,
    private readonly config: AppConfigService,
  ) {}

  /** Makes the attempt; its outcome, or null when there was none to make. */
  async attempt(deliveryId: string, attempt: number): Promise<AttemptOutcome | null> {
    const delivery = await this.loads.submit(deliveryId);
    // Gone with its webhook, or this attempt was made already (a job run twice).
    if (!delivery || delivery.status !== 'pending' || delivery.attempts !== attempt - 1) return null;

    const startedAt = new Date();
    const outcome = delivery.enabled
      ? await this.send(delivery)
      : { statusCode: null, error: 'the webhook is disabled', response: null, succeeded: false, final: true, blameless: true };
    const durationMs = Date.now() - startedAt.getTime();

    const wait =
      outcome.succeeded || outcome.final
        ? null
        : this.webhookQueue.retrySchedule.retryWait(attempt - delivery.round_first_attempt + 1, outcome.retryAfterMs ?? null);
    const status: DeliveryStatus = outcome.succeeded ? 'succeeded' : wait === null ? 'failed' : 'pending';
    const nextAttemptAt = wait === null ? null : new Date(Date.now() + wait);
    const { statusCode, error, response, succeeded } = outcome;
    const written = await this.results.submit({
      deliveryId,
      attempt,
      loadedAt: delivery.updated_at,
      status,
      nextAttemptAt,
      retryable: !succeeded && !outcome.final,
      statusCode,
      startedAt,
      durationMs,
      error,
      response,
      succeeded,
      url: delivery.url,
      blameless: outcome.blameless ?? false,
    });
    if (!written) return outcome;
    webhookAttempts.inc({ outcome: written.status === 'pending' ? 'retrying' : written.status });
    if (written.status !== 'pending') return outcome;
    // A replay while this attempt was in flight found it running and queued nothing: its round starts with the next
    // attempt, due now (write), instead of the wait this attempt's round had left.
    const replayed = written.roundFirstAttempt > attempt;
    try {
      await this.webhookQueue.add([{ deliveryId, attempt: attempt + 1, delayMs: replayed ? 0 : (wait ?? 0) }]);
    } catch (err) {
      this.logger.warn(`Could not queue attempt ${attempt + 1} of ${deliveryId}, the sweeper will: ${(err as Error).message}`);
    }
    return outcome;
  }

  private async load(ids: string[]): Promise<PromiseSettledResult<DeliveryRow | null>[]> {
    const rows: DeliveryRow[] = await this.dataSource.query(
      `SELECT d.id, d.event_id, d.payload, d.status, d.attempts, d.round_first_attempt, d.updated_at::text AS updated_at,
              w.url, w.enabled, w.secret, w.previous_secret, w.previous_secret_expires_at
       FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
       WHERE d.id = ANY($1::varchar[])`,
      [[...new Set(ids)]],
    );
    const byId = new Map(rows.map((row) => [row.id, row]));
    return allFulfilled(ids.map((id) => byId.get(id) ?? null));
  }

  /**
   * Each attempt's row and its delivery's new state, for every attempt of the batch in one statement; an attempt
   * only counts (is answered written, else null) if its delivery still waited for exactly it. If the statement
   * fails, each is written alone.
   */
  private async writeResults(results: AttemptResult[]): Promise<PromiseSettledResult<Written | null>[]> {
    const alone = (result: AttemptResult) => settle(this.write([result]).then((written) => written.get(result.deliveryId) ?? null));
    // A delivery twice in one batch (a job run beside itself) would be moved once but logged twice: repeats go alone.
    const seen = new Set<string>();
    const distinct = results.filter((r) => !seen.has(r.deliveryId) && Boolean(seen.add(r.deliveryId)));
    let outcomes: PromiseSettledResult<Written | null>[];
    try {
      const written = await this.write(distinct);
      outcomes = distinct.map((r) => ({ status: 'fulfilled', value: written.get(r.deliveryId) ?? null }));
    } catch (err: unknown) {
      outcomes = distinct.length === 1 ? [{ status: 'rejected', reason: err }] : await Promise.all(distinct.map(alone));
    }
    const byResult = new Map(distinct.map((r, i) => [r, outcomes[i]]));
    const answers: PromiseSettledResult<Written | null>[] = [];
    for (const r of results) answers.push(byResult.get(r) ?? (await alone(r)));
    return answers;
  }

  /**
   * A delivery replayed since its attempt loaded it (its updated_at moved: only a replay writes a pending delivery
   * besides its attempts) had its replay's attempt taken by this one, which started before it: unless this one
   * succeeded or was final, the replay's round starts with the next attempt, due now, with the whole schedule.
   */
  private async write(results: AttemptResult[]): Promise<Map<string, Written>> {
    const rows: { id: string; status: DeliveryStatus; round_first_attempt: number }[] = await this.dataSource.query(
      `WITH input AS (
         SELECT * FROM jsonb_to_recordset($1::jsonb) AS i(id varchar, attempt int, loaded_at text, status varchar,
           next_attempt_at timestamptz, retryable boolean, status_code int, started_at timestamptz, duration_ms int,
           error text, response text, succeeded boolean, url text, blameless boolean)
       ), moved AS (
         UPDATE webhook_deliveries d SET attempts = i.attempt, last_status_code = i.status_code, updated_at = now(),
           status = CASE WHEN ${REPLAYED} THEN 'pending' ELSE i.status END,
           next_attempt_at = CASE WHEN ${REPLAYED} THEN now() ELSE i.next_attempt_at END,
           round_first_attempt = CASE WHEN ${REPLAYED} THEN i.attempt + 1 ELSE d.round_first_attempt END
         FROM input i
         WHERE d.id = i.id AND d.status = 'pending' AND d.attempts = i.attempt - 1
         RETURNING d.id, d.webhook_id, d.status, d.round_first_attempt
       )${endpointHealthCtes('$2')}, logged AS (
         INSERT INTO webhook_attempts (delivery_id, attempt, started_at, duration_ms, status_code, error, response, succeeded)
         SELECT i.id, i.attempt, i.started_at, i.duration_ms, i.status_code, i.error, i.response, i.succeeded
         FROM input i JOIN moved ON moved.id = i.id
         RETURNING delivery_id
       )
       SELECT moved.id, moved.status, moved.round_first_attempt FROM moved JOIN logged ON logged.delivery_id = moved.id`,
      [
        JSON.stringify(
          results.map((r) => ({
            id: r.deliveryId,
            attempt: r.attempt,
            loaded_at: r.loadedAt,
            status: r.status,
            next_attempt_at: r.nextAttemptAt,
            retryable: r.retryable,
            status_code: r.statusCode,
            started_at: r.startedAt,
            duration_ms: r.durationMs,
            error: r.error,
            response: r.response,
            succeeded: r.succeeded,
            url: r.url,
            blameless: r.blameless,
          })),
        ),
        this.config.env.WEBHOOK_DISABLE_AFTER_FAILING_MS,
      ],
    );
    return new Map(rows.map((row) => [row.id, { status: row.status, roundFirstAttempt: row.round_first_attempt }]));
  }

  private async send(delivery: DeliveryRow): Promise<AttemptOutcome> {
    const timeoutMs = this.config.env.WEBHOOK_TIMEOUT_MS;
    const signal = AbortSignal.timeout(timeoutMs);
    try {
      const url = new URL(delivery.url);
      const addresses = await this.targets.addressesOf(url, signal);
      const body = webhookBody(delivery.event_id, delivery.payload);
      const answer = await postWebhook(url, body, this.headers(delivery, body), addresses, signal);
      if (signal.aborted) throw signal.reason;
      const succeeded = answer.statusCode >= 200 && answer.statusCode < 300;
      const error = succeeded
        ? null
        : `HTTP ${answer.statusCode}${answer.statusCode >= 300 && answer.statusCode < 400 ? ': redirects are not followed' : ''}`;
      const retryAfterMs = succeeded ? null : parseRetryAfter(answer.retryAfter, Date.now());
      // 410 Gone: no retry, and the webhook is disabled with this attempt's write (endpointHealthCtes).
      return {
        statusCode: answer.statusCode,
        error,
        response: storable(answer.excerpt),
        succeeded,
        final: answer.statusCode === GONE,
        retryAfterMs,
      };
    } catch (err) {
      if (signal.aborted) return failure(`no answer within ${timeoutMs} ms`);
      if (err instanceof TargetRefused) return failure(err.message);
      if (err instanceof SecretBoxError) {
        // The operator's key configuration is not the tenant's business: the log says what, the attempt only that.
        this.logger.error(`Webhook ${delivery.event_id}: ${err.message}`);
        return { ...failure('the signing secret could not be opened (the server log says why)'), blameless: true };
      }
      return failure((err as Error).message || String(err));
    }
  }

  /** Standard Webhooks headers; while a rotated-out secret is still valid, both secrets sign (space-separated). */
  private headers(delivery: DeliveryRow, body: string): Record<string, string> {
    const now = new Date();
    const signers = [this.signer(delivery.secret)];
    if (delivery.previous_secret && delivery.previous_secret_expires_at && delivery.previous_secret_expires_at > now) {
      signers.push(this.signer(delivery.previous_secret));
    }
    return {
      'content-type': 'application/json',
      'user-agent': USER_AGENT,
      'webhook-id': delivery.event_id,
      'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
      'webhook-signature': signers.map((signer) => signer.sign(delivery.event_id, now, body)).join(' '),
    };
  }

  /** The signer of a sealed secret, opened once (a rotation seals a new one, so the sealed text is the key). */
  private signer(sealed: string): StandardWebhook {
    let signer = this.signers.get(sealed);
    if (!signer) {
      if (this.signers.size >= MAX_SIGNERS) this.signers.delete(this.signers.keys().next().value!);
      signer = new StandardWebhook(this.secrets.open(sealed));
      this.signers.set(sealed, signer);
    }
    return signer;
  }
}

function failure(error: string): AttemptOutcome {
  return { statusCode: null, error, response: null, succeeded: false };
}

/** PostgreSQL text cannot hold NUL. */
function storable(text: string): string | null {
  return text === '' ? null : text.replaceAll('\u0000', '');
}
