import { Check, Column, Entity, Index, PrimaryColumn } from 'typeorm';

export type ProviderWebhookIdState = 'pending' | 'applied';

/**
 * A `webhook-id` of the provider's event calls (D-24), so that each call is applied once whatever Redis forgot or
 * restored: `pending` while one instance applies its events (the claim lapses after a minute, so a call whose
 * instance died is taken over by the provider's retry), then `applied` for 24 h (providers retry a call for up
 * to a day). Rows past `expires_at` are purged.
 */
@Entity('provider_webhook_ids')
@Index('IX_provider_webhook_ids_expires', ['expiresAt'])
@Check('CHK_provider_webhook_ids_state', `"state" IN ('pending', 'applied')`)
export class ProviderWebhookId {
  /** sha256 (hex) of the webhook-id: a provider's ids have no length limit. */
  @PrimaryColumn({ type: 'char', length: 64, primaryKeyConstraintName: 'PK_provider_webhook_ids' })
  idHash: string;

  @Column({ type: 'varchar', length: 8 })
  state: ProviderWebhookIdState;

  /** The claim that set the row: only its holder marks it applied or gives it back (another may have taken it over). */
  @Column({ type: 'uuid' })
  claim: string;

  /** pending: when the claim lapses and a retry may take it over; applied: when the id is forgotten. */
  @Column({ type: 'timestamptz' })
  expiresAt: Date;
}
