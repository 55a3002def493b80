import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { normalizeEmailAddress } from '../common/email-address';
import { sweepInBatches } from '../common/expired-rows';
import { AppConfigService } from '../config/app-config.service';

/** Rows past the window are purged this often on every instance (as ExpiredRows purges), at most this many a statement. */
const PURGE_INTERVAL_MS = 15 * 60 * 1000;
const PURGE_BATCH = 500;

/** A bounce of an address in a message. */
export interface AddressBounce {
  accountId: string;
  email: string;
  messageId: string;
}

/**
 * Whether an address with `count` soft bounces within the window (this one included) goes on the suppression list:
 * at `threshold` of them, never when the threshold is 0. As Mailchimp turns repeated soft bounces into a hard one
 * (SES and Postmark suppress only hard bounces): an inbox full for weeks will not take mail next week either.
 */
export function softBouncesSuppress(count: number, threshold: number): boolean {
  return threshold > 0 && count >= threshold;
}

/**
 * The bounces in the order their addresses are locked: by account, then address (normalized), so that two calls
 * bouncing the same addresses in opposite orders take their locks in one order and never deadlock.
 */
export function inLockOrder(bounces: readonly AddressBounce[]): AddressBounce[] {
  const compare = (x: string, y: string) => (x < y ? -1 : x > y ? 1 : 0);
  return bounces
    .map((b) => ({ ...b, email: normalizeEmailAddress(b.email) }))
    .sort((a, b) => compare(a.accountId, b.accountId) || compare(a.email, b.email));
}

/**
 * Soft bounces per account and address (soft_bounces, D-39), counted in the caller's transaction so that the count
 * and the suppression it makes commit with the events that reported them (a retried call counts nothing twice: one
 * row per message and address). Rows past the window count for nothing: every instance purges them periodically,
 * so that addresses that bounced once and never again do not stay forever.
 */
@Injectable()
export class SoftBounces implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(SoftBounces.name);
  private readonly threshold: number;
  private readonly windowDays: number;
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly dataSource: DataSource,
    config: AppConfigService,
  ) {
    this.threshold = config.env.SOFT_BOUNCE_SUPPRESS_COUNT;
    this.windowDays = config.env.SOFT_BOUNCE_WINDOW_DAYS;
  }

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => void this.purge(), PURGE_INTERVAL_MS);
    this.timer.unref();
  }

  onApplicationShutdown(): void {
    clearInterval(this.timer);
  }

  /** Deletes the rows past the window, in batches (SKIP LOCKED: instances purging at once take different rows). */
  async purge(): Promise<void> {
    try {
      await sweepInBatches({ kind: 'soft_bounces', size: PURGE_BATCH }, async (size) => {
        const [, deleted]: [unknown, number] = await this.dataSource.query(
          `DELETE FROM soft_bounces WHERE ctid IN (
             SELECT ctid FROM soft_bounces WHERE occurred_at < now() - make_interval(days => $2) LIMIT $1 FOR UPDATE SKIP LOCKED)`,
          [size, this.windowDays],
        );
        return deleted;
      });
    } catch (err) {
      this.logger.warn(`Could not purge the soft bounces past the window: ${(err as Error).message}`);
    }
  }

  /** Records the bounces; resolves with those whose address has now reached the threshold (to be suppressed). */
  async record(manager: EntityManager, bounces: AddressBounce[]): Promise<AddressBounce[]> {
    const reached: AddressBounce[] = [];
    for (const bounce of inLockOrder(bounces)) {
      const { email } = bounce;
      // Concurrent bounces of one address count one after the other: the last one sees them all.
      await manager.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`soft-bounce ${bounce.accountId} ${email}`]);
      const rows: { count: number }[] = await manager.query(
        `WITH pruned AS (
           DELETE FROM soft_bounces WHERE account_id = $1 AND email = $2 AND occurred_at < now() - make_interval(days => $4)
         ), inserted AS (
           INSERT INTO soft_bounces (account_id, email, message_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING 1
         )
         SELECT ((SELECT count(*) FROM soft_bounces
                  WHERE account_id = $1 AND email = $2 AND occurred_at >= now() - make_interval(days => $4))
                 + (SELECT count(*) FROM inserted))::int AS count`,
        [bounce.accountId, email, bounce.messageId, this.windowDays],
      );
      if (softBouncesSuppress(rows[0].count, this.threshold)) reached.push(bounce);
    }
    return reached;
  }

  /** A delivery to the address (or its suppression) starts its count again. */
  async reset(manager: EntityManager, addresses: { accountId: string; email: string }[]): Promise<void> {
    if (addresses.length === 0) return;
    await manager.query(
      `DELETE FROM soft_bounces s USING unnest($1::varchar[], $2::varchar[]) AS d(account_id, email)
       WHERE s.account_id = d.account_id AND s.email = d.email`,
      [addresses.map((a) => a.accountId), addresses.map((a) => normalizeEmailAddress(a.email))],
    );
  }
}
