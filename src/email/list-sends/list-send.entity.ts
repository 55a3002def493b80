import { Check, Column, CreateDateColumn, Entity, Index, UpdateDateColumn } from 'typeorm';
import { AccountOwned } from '../../accounts/account-owned';
import type { PreparedSend } from '../personal-messages';

export const LIST_SEND_STATUSES = ['queued', 'sending', 'done', 'stopped', 'failed'] as const;
export type ListSendStatus = (typeof LIST_SEND_STATUSES)[number];
/** A send in one of these makes nothing more. */
export const FINISHED_LIST_SEND_STATUSES: readonly ListSendStatus[] = ['done', 'stopped', 'failed'];

/** The check a page's or the end's progress breaks on purpose when the row moved on since its run read it. */
export const METERED_COVERS_QUEUED = 'CHK_list_sends_metered_covers_queued';

/**
 * A send to a mailing list (`lsnd_…`): accepted with its request, then fanned out by the `list-sends` queue a
 * page of subscribers at a time. Each page's messages commit together with the move of `cursor`, so a worker
 * that dies resumes after the last committed page. It outlives its list (no foreign key): a list deleted
 * meanwhile has no more subscribers, and the send ends and gives back what it did not make. A fan-out that keeps
 * failing ends `failed` after LIST_SEND_MAX_ATTEMPTS runs, counted here (`attempts`) so that a job added again by
 * the sweeper goes on counting.
 */
@Entity('list_sends')
@Index('IX_list_sends_unfinished', ['updatedAt'], { where: `"status" NOT IN ('done', 'stopped', 'failed')` })
@Check(METERED_COVERS_QUEUED, `"metered" >= "queued"`)
export class ListSend extends AccountOwned {
  /** The list it was sent to (which may have been deleted since). */
  @Column({ type: 'varchar', length: 40 })
  listId: string;

  /** The send, checked and resolved at acceptance (the template's content as it was then). */
  @Column({ type: 'jsonb' })
  request: PreparedSend;

  @Column({ type: 'varchar', length: 8, default: 'queued' })
  status: ListSendStatus;

  /** The last subscriber address a committed page reached; null before the first page. */
  @Column({ type: 'varchar', length: 320, nullable: true })
  cursor: string | null;

  /** Messages made so far. */
  @Column({ type: 'int', default: 0 })
  queued: number;

  /**
   * Emails counted against the account's quotas for this send so far: the subscribers counted at acceptance,
   * plus what pages made beyond them. Never below `queued`; set to `queued` when the send ends, the rest
   * given back.
   */
  @Column({ type: 'int', default: 0 })
  metered: number;

  /** Subscribers skipped so far because their address is on the suppression list. */
  @Column({ type: 'int', default: 0 })
  suppressed: number;

  /** Subscribers whose message could not be made (their rendering failed). */
  @Column({ type: 'int', default: 0 })
  failed: number;

  /** A stopped send: the subscribers it did not write to (subscribed and unsuppressed past where it stopped). */
  @Column({ type: 'int', default: 0 })
  refused: number;

  /** A stopped send: the quota that ran out (emails_per_month, global_hourly, …). */
  @Column({ type: 'varchar', length: 32, nullable: true })
  stoppedReason: string | null;

  /** Runs of its fan-out so far (a run that a worker's shutdown interrupted is not counted). */
  @Column({ type: 'int', default: 0 })
  attempts: number;

  /** What its last failed run reported (a failed send: why it failed); null while no run failed. */
  @Column({ type: 'text', nullable: true })
  lastError: string | null;

  @CreateDateColumn({ type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ type: 'timestamptz' })
  updatedAt: Date;

  /** When it ended: done, stopped or failed. */
  @Column({ type: 'timestamptz', nullable: true })
  completedAt: Date | null;
}
