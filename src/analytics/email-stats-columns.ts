import { Column } from 'typeorm';

/**
 * The counts of an account's email in one rollup bucket (an hour or a day, UTC), as the triggers of migration
 * CreateAnalyticsRollups add them; definitions in docs/decisions.md, Analytics.
 */
export abstract class EmailStatsColumns {
  /** Recipients the provider accepted (`sent` events; one of the whole message counts the recipients it went to). */
  @Column({ type: 'bigint', default: 0 })
  sent: string;

  @Column({ type: 'bigint', default: 0 })
  delivered: string;

  @Column({ type: 'bigint', default: 0 })
  bounced: string;

  @Column({ type: 'bigint', default: 0 })
  complained: string;

  @Column({ type: 'bigint', default: 0 })
  unsubscribed: string;

  /** Opens by people (events not flagged `machine`). */
  @Column({ type: 'bigint', default: 0 })
  opened: string;

  /** Messages opened by a person for the first time. */
  @Column({ type: 'bigint', default: 0 })
  openedUnique: string;

  /** Opens by machines: privacy proxies, scanners, hits within seconds of sending. */
  @Column({ type: 'bigint', default: 0 })
  openedMachine: string;

  @Column({ type: 'bigint', default: 0 })
  clicked: string;

  @Column({ type: 'bigint', default: 0 })
  clickedUnique: string;

  @Column({ type: 'bigint', default: 0 })
  clickedMachine: string;
}
