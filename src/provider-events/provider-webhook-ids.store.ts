import { randomUUID } from 'node:crypto';
import { Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { sha256Hex } from '../common/crypto/sha256';
import { ExpiredRows } from '../common/expired-rows';

/** An id applied once is remembered this long: providers retry a call with the same id for up to a day. */
const APPLIED_TTL = '24 hours';

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

  purgeExpired(): Promise<void> {
    return this.expired.purge();
  }
}
