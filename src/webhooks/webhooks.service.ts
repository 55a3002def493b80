import { randomBytes } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { In, Repository } from 'typeorm';
import { SecretBox } from '../common/crypto/secret-box';
import { AppException } from '../common/errors/app.exception';
import { ErrorCode } from '../common/errors/error-code';
import { decodePageCursor, encodePageCursor, newestFirstPage } from '../common/http/page-cursor';
import { newId } from '../common/ids';
import type { CreateWebhookDto, UpdateWebhookDto } from './dto/webhook.dto';
import { WebhookAttempt } from './webhook-attempt.entity';
import { DeliveryStatus, WebhookDelivery } from './webhook-delivery.entity';
import { DEFAULT_MAX_CONCURRENCY } from './webhook-endpoint-limits';
import { WebhookEventBody } from './webhook-event-body.entity';
import { webhookEvent } from './webhook-thin-event';
import { parseWebhookUrl, TargetRefused, WebhookTargets } from './webhook-targets';
import { Webhook } from './webhook.entity';
import { WebhookQueue } from './webhook.queue';

/** How long a rotated-out secret keeps signing (D-23). */
const PREVIOUS_SECRET_TTL_MS = 24 * 3600 * 1000;
/** Failed deliveries one recover call replays at most; the next call (same window) takes the next ones. */
export const RECOVER_MAX_PER_CALL = 1000;

type EnabledState = Pick<Webhook, 'enabled' | 'disabledReason' | 'disabledAt' | 'failingSince' | 'disabledNoticePending'>;

/** Enabling clears why it was disabled and the failures before; disabling through the API says so. */
function enabledState(enabled: boolean): EnabledState {
  return enabled
    ? { enabled, disabledReason: null, disabledAt: null, failingSince: null, disabledNoticePending: false }
    : { enabled, disabledReason: 'manual', disabledAt: new Date(), failingSince: null, disabledNoticePending: false };
}

export interface DeliveryWithAttempts {
  delivery: WebhookDelivery;
  attempts: WebhookAttempt[];
}

export interface DeliveryPage {
  deliveries: DeliveryWithAttempts[];
  nextCursor: string | null;
}

export interface RecoveredDeliveries {
  queued: number;
  /** Failed deliveries of the window are left beyond the cap. */
  more: boolean;
  since: Date;
  /** As given, or the time of the call. */
  until: Date;
}

/** The account's webhook registrations and their delivery log (D-23). The only writer of webhooks. */
@Injectable()
export class WebhooksService {
  private readonly logger = new Logger(WebhooksService.name);

  constructor(
    @InjectRepository(Webhook) private readonly webhooks: Repository<Webhook>,
    @InjectRepository(WebhookDelivery) private readonly deliveries: Repository<WebhookDelivery>,
    @InjectRepository(WebhookAttempt) private readonly attempts: Repository<WebhookAttempt>,
    @InjectRepository(WebhookEventBody) private readonly eventBodies: Repository<WebhookEventBody>,
    private readonly secrets: SecretBox,
    private readonly targets: WebhookTargets,
    private readonly webhookQueue: WebhookQueue,
  ) {}

  /** Registers the webhook; the secret is returned only here (and by rotateSecret). */
  async create(accountId: string, dto: CreateWebhookDto): Promise<{ webhook: Webhook; secret: string }> {
    const url = await this.checkedUrl(dto.url);
    const secret = newSecret();
    const webhook = this.webhooks.create({
      id: newId('whk'),
      accountId,
      url,
      events: [...new Set(dto.events)],
      description: dto.description ?? null,
      ...enabledState(dto.enabled ?? true),
      maxConcurrency: dto.maxConcurrency ?? DEFAULT_MAX_CONCURRENCY,
      rateLimitPerSecond: dto.rateLimitPerSecond ?? null,
      secret: this.secrets.seal(secret),
      previousSecret: null,
      previousSecretExpiresAt: null,
    });
    await this.webhooks.insert(webhook);
    return { webhook: await this.get(accountId, webhook.id), secret };
  }

  list(accountId: string): Promise<Webhook[]> {
    return this.webhooks.find({ where: { accountId }, order: { createdAt: 'ASC', id: 'ASC' } });
  }

  async get(accountId: string, id: string): Promise<Webhook> {
    const webhook = await this.webhooks.findOneBy({ id, accountId });
    if (!webhook) throw AppException.notFound('Webhook', id);
    return webhook;
  }

  async update(accountId: string, id: string, dto: UpdateWebhookDto): Promise<Webhook> {
    const webhook = await this.get(accountId, id);
    const changes: Partial<Pick<Webhook, 'url' | 'events' | 'description' | 'maxConcurrency' | 'rateLimitPerSecond'> & EnabledState> = {};
    if (dto.url !== undefined) changes.url = await this.checkedUrl(dto.url);
    // The failures so far were another URL's: the new one starts with a clean record.
    if (changes.url !== undefined && changes.url !== webhook.url) changes.failingSince = null;
    if (dto.events !== undefined) changes.events = [...new Set(dto.events)];
    if (dto.description !== undefined) changes.description = dto.description;
    if (dto.maxConcurrency !== undefined) changes.maxConcurrency = dto.maxConcurrency;
    if (dto.rateLimitPerSecond !== undefined) changes.rateLimitPerSecond = dto.rateLimitPerSecond;
    if (dto.enabled !== undefined && dto.enabled !== webhook.enabled) Object.assign(changes, enabledState(dto.enabled));
    if (Object.keys(changes).length > 0) await this.webhooks.update({ id, accountId }, changes);
    return this.get(accountId, id);
  }

  /** Deletes the webhook with its deliveries; their queued attempts find nothing to do. */
  async remove(accountId: string, id: string): Promise<Webhook> {
    const webhook = await this.get(accountId, id);
    await this.webhooks.delete({ id, accountId });
    return webhook;
  }

  /**
   * A new secret; the current one keeps signing beside it for 24 h (a second rotation drops the older one at once).
   * Under the webhook's row lock: concurrent rotations follow one another, each retiring the secret the one before it
   * returned, so that every secret returned signs (the last one's, and its predecessor's for 24 h).
   */
  async rotateSecret(accountId: string, id: string): Promise<{ secret: string; previousSecretExpiresAt: Date }> {
    const secret = newSecret();
    const sealed = this.secrets.seal(secret);
    return this.webhooks.manager.transaction(async (manager) => {
      const locked = manager.getRepository(Webhook);
      const webhook = await locked.findOne({
        where: { id, accountId },
        select: { id: true, secret: true },
        lock: { mode: 'pessimistic_write' },
      });
      if (!webhook) throw AppException.notFound('Webhook', id);
      const previousSecretExpiresAt = new Date(Date.now() + PREVIOUS_SECRET_TTL_MS);
      await locked.update({ id, accountId }, { secret: sealed, previousSecret: webhook.secret, previousSecretExpiresAt });
      return { secret, previousSecretExpiresAt };
    });
  }

  /** The webhook's deliveries, newest first, keyset-paged, each with its attempts. */
  async listDeliveries(
    accountId: string,
    webhookId: string,
    query: { limit: number; cursor?: string; status?: DeliveryStatus },
  ): Promise<DeliveryPage> {
    await this.get(accountId, webhookId);
    const page = this.deliveries
      .createQueryBuilder('d')
      .where('d.webhookId = :webhookId AND d.accountId = :accountId', { webhookId, accountId });
    if (query.status) page.andWhere('d.status = :status', { status: query.status });
    const listing = `webhook-deliveries:${webhookId}`;
    const after = query.cursor ? decodePageCursor(listing, query.cursor) : null;
    const { rows: deliveries, next } = await newestFirstPage(page, after, query.limit);
    return {
      deliveries: await this.withAttempts(deliveries),
      nextCursor: next && encodePageCursor(listing, next, null),
    };
  }

  /**
   * Delivers the event again (same event id, same payload), whatever the delivery's state, as Svix's resend does: the
   * next attempt is due now (a retry waiting for its backoff is made at once) and gets the whole retry schedule
   * again; its attempts are added to the log. Never a second attempt at once: an attempt in flight is the one made
   * now (WebhookQueue.attemptNow); if it fails, its write sees the replay and the next attempt is due at once, with
   * the whole schedule (WebhookDeliveryService). 409 when the webhook is disabled.
   */
  async replay(accountId: string, webhookId: string, deliveryId: string): Promise<DeliveryWithAttempts> {
    const webhook = await this.get(accountId, webhookId);
    const delivery = await this.deliveries.findOneBy({ id: deliveryId, webhookId, accountId });
    if (!delivery) throw AppException.notFound('Delivery', deliveryId);
    if (!webhook.enabled) throw new AppException(ErrorCode.Conflict, 'The webhook is disabled: enable it before replaying a delivery');
    // TypeORM's query() answers an UPDATE … RETURNING as [rows, count]. One statement: an attempt written meanwhile
    // is read here, so the attempt made now is the one after it.
    const [rows]: [{ attempts: number }[], number] = await this.deliveries.query(
      `UPDATE webhook_deliveries SET status = 'pending', round_first_attempt = attempts + 1, next_attempt_at = now(), updated_at = now()
       WHERE id = $1 RETURNING attempts`,
      [deliveryId],
    );
    if (rows.length === 0) throw AppException.notFound('Delivery', deliveryId);
    // Read before queueing: the answer shows the replay accepted, not a race with its first attempt.
    const [replayed] = await this.withAttempts([await this.deliveries.findOneByOrFail({ id: deliveryId })]);
    try {
      await this.webhookQueue.attemptNow({ deliveryId, attempt: rows[0].attempts + 1 });
    } catch (err) {
      this.logger.warn(`Could not queue the replay of ${deliveryId}, the sweeper will: ${(err as Error).message}`);
    }
    return replayed;
  }

  /**
   * Replays every failed delivery of the webhook created in [since, until), oldest first, at most
   * RECOVER_MAX_PER_CALL: each like `replay`, in one statement. Those replayed are pending, so a second call with
   * the same window takes the next ones and never queues one twice. 409 when the webhook is disabled.
   */
  async recover(accountId: string, webhookId: string, window: { since: string; until?: string }): Promise<RecoveredDeliveries> {
    const since = new Date(window.since);
    const until = window.until === undefined ? new Date() : new Date(window.until);
    if (until <= since) throw AppException.invalidField('until', 'must be after since');
    const webhook = await this.get(accountId, webhookId);
    if (!webhook.enabled) throw new AppException(ErrorCode.Conflict, 'The webhook is disabled: enable it before recovering its deliveries');
    const [rows]: [{ id: string; attempts: number; candidates: string }[], number] = await this.deliveries.query(
      `WITH candidates AS (
         SELECT id, created_at FROM webhook_deliveries
         WHERE webhook_id = $1 AND account_id = $2 AND status = 'failed' AND created_at >= $3 AND created_at < $4
         ORDER BY created_at, id LIMIT $5 + 1 FOR UPDATE SKIP LOCKED
       ), chosen AS (
         SELECT id FROM candidates ORDER BY created_at, id LIMIT $5
       )
       UPDATE webhook_deliveries d SET status = 'pending', round_first_attempt = d.attempts + 1, next_attempt_at = now(), updated_at = now()
       FROM chosen WHERE d.id = chosen.id AND d.status = 'failed'
       RETURNING d.id, d.attempts, (SELECT count(*) FROM candidates) AS candidates`,
      [webhookId, accountId, since, until, RECOVER_MAX_PER_CALL],
    );
    try {
      await this.webhookQueue.add(rows.map((row) => ({ deliveryId: row.id, attempt: row.attempts + 1 })));
    } catch (err) {
      this.logger.warn(`Could not queue ${rows.length} recovered deliveries of ${webhookId}, the sweeper will: ${(err as Error).message}`);
    }
    return { queued: rows.length, more: rows.length > 0 && Number(rows[0].candidates) > rows.length, since, until };
  }

  /**
   * The event with this id as its webhooks got it, or would have got it whole (`{id, type, timestamp, …}`): its
   * full body when it was delivered thin, else the payload of one of its deliveries. 404 once retention took them.
   */
  async event(accountId: string, eventId: string): Promise<Record<string, unknown>> {
    const stored =
      (await this.eventBodies.findOne({ where: { id: eventId, accountId }, select: { payload: true } })) ??
      (await this.deliveries.findOne({ where: { eventId, accountId }, select: { payload: true } }));
    if (!stored) throw AppException.notFound('Event', eventId);
    return webhookEvent(eventId, stored.payload);
  }

  private async withAttempts(deliveries: WebhookDelivery[]): Promise<DeliveryWithAttempts[]> {
    if (deliveries.length === 0) return [];
    const attempts = await this.attempts.find({
      where: { deliveryId: In(deliveries.map((d) => d.id)) },
      order: { deliveryId: 'ASC', attempt: 'ASC' },
    });
    return deliveries.map((delivery) => ({ delivery, attempts: attempts.filter((a) => a.deliveryId === delivery.id) }));
  }

  /** The URL as it will be called, or 400 on `url` saying why it may not be a webhook's. */
  private async checkedUrl(raw: string): Promise<string> {
    try {
      const url = parseWebhookUrl(raw);
      await this.targets.addressesOf(url);
      return url.href;
    } catch (err) {
      if (err instanceof TargetRefused) throw AppException.invalidField('url', err.message);
      throw err;
    }
  }
}

/** `whsec_` + base64 of 32 random bytes: the Standard Webhooks secret form. */
function newSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}
