import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { allFulfilled, MicroBatch } from '../common/micro-batch';
import type { EndpointLimits } from './webhook-endpoint-limits';
import type { DeliverWebhookJob } from './webhook.queue';

export interface AttemptTarget {
  webhookId: string;
  limits: EndpointLimits;
}

interface LimitsRow {
  id: string;
  max_concurrency: number;
  rate_limit_per_second: number | null;
}

interface DeliveryRow extends LimitsRow {
  delivery_id: string;
  status: string;
  attempts: number;
}

const MAX_BATCH = 200;
/** A webhook's limits are read again after this long: a change reaches attempts already queued this fast. */
const LIMITS_TTL_MS = 2000;
const MAX_CACHED = 10_000;

/** Which endpoint an attempt goes to and that endpoint's limits, read in batches (concurrent jobs share a statement). */
@Injectable()
export class WebhookEndpoints {
  private readonly targets = new MicroBatch<string, DeliveryRow | null>((ids) => this.loadTargets(ids), MAX_BATCH, 2);
  private readonly limits = new MicroBatch<string, EndpointLimits | null>((ids) => this.loadLimits(ids), MAX_BATCH, 2);
  private readonly cache = new Map<string, { limits: EndpointLimits; until: number }>();

  constructor(private readonly dataSource: DataSource) {}

  /** The endpoint of this attempt, or null when the attempt is not (or no longer) due: made already, or its delivery gone. */
  async ofAttempt(job: DeliverWebhookJob): Promise<AttemptTarget | null> {
    const row = await this.targets.submit(job.deliveryId);
    if (!row || row.status !== 'pending' || row.attempts !== job.attempt - 1) return null;
    return { webhookId: row.id, limits: this.remember(row) };
  }

  /** The endpoint's limits, at most LIMITS_TTL_MS old; null when its webhook is gone. */
  async limitsOf(webhookId: string): Promise<EndpointLimits | null> {
    const cached = this.cache.get(webhookId);
    if (cached && cached.until > Date.now()) return cached.limits;
    return this.limits.submit(webhookId);
  }

  private remember(row: LimitsRow): EndpointLimits {
    const limits = { maxConcurrency: row.max_concurrency, rateLimitPerSecond: row.rate_limit_per_second };
    if (this.cache.size >= MAX_CACHED) this.cache.clear();
    this.cache.set(row.id, { limits, until: Date.now() + LIMITS_TTL_MS });
    return limits;
  }

  private async loadTargets(deliveryIds: string[]): Promise<PromiseSettledResult<DeliveryRow | null>[]> {
    const rows: DeliveryRow[] = await this.dataSource.query(
      `SELECT d.id AS delivery_id, d.status, d.attempts, w.id, w.max_concurrency, w.rate_limit_per_second
       FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
       WHERE d.id = ANY($1::varchar[])`,
      [[...new Set(deliveryIds)]],
    );
    const byId = new Map(rows.map((row) => [row.delivery_id, row]));
    return allFulfilled(deliveryIds.map((id) => byId.get(id) ?? null));
  }

  private async loadLimits(webhookIds: string[]): Promise<PromiseSettledResult<EndpointLimits | null>[]> {
    const rows: LimitsRow[] = await this.dataSource.query(
      'SELECT id, max_concurrency, rate_limit_per_second FROM webhooks WHERE id = ANY($1::varchar[])',
      [[...new Set(webhookIds)]],
    );
    const byId = new Map(rows.map((row) => [row.id, this.remember(row)]));
    return allFulfilled(webhookIds.map((id) => byId.get(id) ?? null));
  }
}
