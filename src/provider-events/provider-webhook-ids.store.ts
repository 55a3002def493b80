import { randomUUID } from 'node:crypto';
import { Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { sha256Hex } from '../common/crypto/sha256';
import { ExpiredRows } from '../common/expired-rows';

/** A call being applied holds its webhook-id this long at most: a crashed instance lets the provider's retry through. */
const CLAIM_TTL = '60 seconds';
/** An id applied once is remembered this long: providers retry a call with the same id for up to a day. */
const APPLIED_TTL = '24 hours';

/** A webhook-id this call holds: its row, and the claim that identifies this holder. */
export interface HeldWebhookId {
  idHash: string;
  claim: string;
}

/** What claiming a webhook-id found: it is this call's now, applied already, or being applied. */
export type WebhookIdClaim = ({ state: 'claimed' } & HeldWebhookId) | { state: 'applied' } | { state: 'busy' };

/** The provider's webhook-ids (provider_webhook_ids): one call applies each, on any instance, whatever Redis holds. */
@Injectable()
export class ProviderWebhookIds implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly expired: ExpiredRows;

  constructor(private readonly dataSource: DataSource) {
    this.expired = new ExpiredRows(dataSource, 'provider_webhook_ids');
  }

  onApplicationBootstrap(): void {
    this.expired.start();
  }

  onApplicationShutdown(): void {
    this.expired.stop();
  }

  /**
   * Claims the id with one INSERT … ON CONFLICT: of calls racing on any instances one claims it, the others
   * find its row. A row past its expiry (a claim whose instance died, an id forgotten but not purged yet) is
   * taken over.
   */
  async claim(webhookId: string): Promise<WebhookIdClaim> {
    const idHash = sha256Hex(webhookId);
    const claim = randomUUID();
    const claimed: unknown[] = await this.dataSource.query(
      `INSERT INTO provider_webhook_ids (id_hash, state, claim, expires_at) VALUES ($1, 'pending', $2, now() + interval '${CLAIM_TTL}')
       ON CONFLICT (id_hash) DO UPDATE SET state = 'pending', claim = EXCLUDED.claim, expires_at = EXCLUDED.expires_at
         WHERE provider_webhook_ids.expires_at <= now()
       RETURNING claim`,
      [idHash, claim],
    );
    if (claimed.length) return { state: 'claimed', idHash, claim };
    const rows: { state: string }[] = await this.dataSource.query('SELECT state FROM provider_webhook_ids WHERE id_hash = $1', [idHash]);
    // No row: its holder gave it back a moment ago; the provider's retry claims it.
    return rows[0]?.state === 'applied' ? { state: 'applied' } : { state: 'busy' };
  }

  /**
   * Claims the id inside the transaction that applies its call, as applied at once: the row commits with the events
   * or not at all, so a call that failed half-way leaves nothing behind and its retry applies it whole. A call racing
   * on the same id waits for this transaction (its INSERT meets the row's lock), then finds it applied; an old
   * `pending` row (of a version that claimed first and applied after) is busy until it lapses.
   */
  async claimWithin(manager: EntityManager, webhookId: string): Promise<'claimed' | 'applied' | 'busy'> {
    const idHash = sha256Hex(webhookId);
    const claimed: unknown[] = await manager.query(
      `INSERT INTO provider_webhook_ids (id_hash, state, claim, expires_at) VALUES ($1, 'applied', $2, now() + interval '${APPLIED_TTL}')
       ON CONFLICT (id_hash) DO UPDATE SET state = 'applied', claim = EXCLUDED.claim, expires_at = EXCLUDED.expires_at
         WHERE provider_webhook_ids.expires_at <= now()
       RETURNING claim`,
      [idHash, randomUUID()],
    );
    if (claimed.length) return 'claimed';
    const rows: { state: string }[] = await manager.query('SELECT state FROM provider_webhook_ids WHERE id_hash = $1', [idHash]);
    return rows[0]?.state === 'applied' ? 'applied' : 'busy';
  }

  /** The call's events are applied: a retry of it is a duplicate for APPLIED_TTL. */
  async applied({ idHash, claim }: HeldWebhookId): Promise<void> {
    await this.dataSource.query(
      `UPDATE provider_webhook_ids SET state = 'applied', expires_at = now() + interval '${APPLIED_TTL}' WHERE id_hash = $1 AND claim = $2`,
      [idHash, claim],
    );
  }

  /** Applying failed: the provider's retry applies the call. */
  async release({ idHash, claim }: HeldWebhookId): Promise<void> {
    await this.dataSource.query(`DELETE FROM provider_webhook_ids WHERE id_hash = $1 AND claim = $2 AND state = 'pending'`, [
      idHash,
      claim,
    ]);
  }

  purgeExpired(): Promise<void> {
    return this.expired.purge();
  }
}
