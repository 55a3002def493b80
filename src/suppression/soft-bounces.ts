import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { normalizeEmailAddress } from '../common/email-address';
import { AppConfigService } from '../config/app-config.service';

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
 * Soft bounces per account and address (soft_bounces, D-39), counted in the caller's transaction so that the count
 * and the suppression it makes commit with the events that reported them (a retried call counts nothing twice: one
 * row per message and address).
 */
@Injectable()
export class SoftBounces {
  private readonly threshold: number;
  private readonly windowDays: number;

  constructor(config: AppConfigService) {
    this.threshold = config.env.SOFT_BOUNCE_SUPPRESS_COUNT;
    this.windowDays = config.env.SOFT_BOUNCE_WINDOW_DAYS;
  }

  /** Records the bounces; resolves with those whose address has now reached the threshold (to be suppressed). */
  async record(manager: EntityManager, bounces: AddressBounce[]): Promise<AddressBounce[]> {
    const reached: AddressBounce[] = [];
    for (const bounce of bounces) {
      const email = normalizeEmailAddress(bounce.email);
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
      if (softBouncesSuppress(rows[0].count, this.threshold)) reached.push({ ...bounce, email });
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
