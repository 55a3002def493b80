import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import type { NewEvent } from '../outbox/message-event.entity';
import { AWAITING_DELIVERY, Message, MessageContent, MessageStatus } from '../outbox/message.entity';
import { ATTACHMENT_READ_BYTES } from '../outbox/attachments/attachment-content';
import { allFulfilled, MicroBatch, settle } from '../common/micro-batch';
import type { AddParam } from '../outbox/acceptance.repository';
import { expiredPendingCte } from './forward-failures';
import { emails } from '../metrics/metrics';
import { AppConfigService } from '../config/app-config.service';

export type DeliverableMessage = Pick<
  Message,
  | 'id'
  | 'accountId'
  | 'status'
  | 'fromAddress'
  | 'fromDomain'
  | 'systemSender'
  | 'pendingRecipients'
  | 'headerMessageId'
  | 'attempts'
  | 'sentAt'
  | 'tracking'
  | 'listId'
  | 'envelopeFrom'
  | 'inboundMessageId'
  | 'scheduledFor'
> & {
  /** Loaded with the rest when small; null when it is to be loaded on its own (contentForDelivery). */
  content: MessageContent | null;
  /**
   * What sending it holds in memory: its content as JSON, a forwarded message's received bytes, and the reading of its
   * stored attachments (streamed: ATTACHMENT_READ_BYTES, whatever their size).
   */
  loadBytes: number;
};

interface DeliverableRow {
  id: string;
  account_id: string;
  status: MessageStatus;
  from_address: string;
  from_domain: string;
  system_sender: boolean;
  pending_recipients: string[];
  header_message_id: string;
  content: MessageContent | null;
  load_bytes: number;
  attempts: number;
  sent_at: Date | null;
  tracking: Message['tracking'];
  list_id: string | null;
  envelope_from: string | null;
  inbound_message_id: string | null;
  scheduled_for: Date | null;
}

export interface TransitionChanges {
  status: MessageStatus;
  pendingRecipients?: string[];
  attempts?: number;
  lastError?: string | null;
  sentAt?: Date;
  /** When the next attempt of a deferred message is due (null: none); left as it is when undefined. */
  nextAttemptAt?: Date | null;
}

/** The delivery worker's loads and results: concurrent jobs share statements the same way. */
const MAX_DELIVERY_BATCH = 100;
const MAX_CONCURRENT_DELIVERY_BATCHES = 2;

interface AttemptResult {
  messageId: string;
  changes: TransitionChanges;
  events: NewEvent[];
}

interface AttemptRow {
  id: string;
  status: MessageStatus;
  pending_recipients: string[] | null;
  attempts: number | null;
  set_last_error: boolean;
  last_error: string | null;
  sent_at: Date | null;
  set_next_attempt_at: boolean;
  next_attempt_at: Date | null;
}

interface AttemptEventRow {
  /** Events are written in this order, so that their ids keep the order the worker gave them. */
  n: number;
  message_id: string;
  type: string;
  recipient: string | null;
  detail: string | null;
  occurred_at: Date;
}

/**
 * Writes the attempts of several distinct messages (transitionMany): $1 the rows, $2 the statuses they move from,
 * $3 their events, $4 their ids. The rows are found by their keys (the ids also as an array), and the status test
 * is written so that the planner cannot match it to the partial index of awaiting messages: with a backlog it
 * joined jsonb_to_recordset (guessed at 100 rows) against that whole index, then ANDed the index with the keys'
 * bitmap, reading every queued message's entry for each batch (over 800 entries per message sent from a backlog
 * of 5,000). test/e2e/delivery-plan.e2e-spec.ts holds it to that.
 */
export const ATTEMPT_RESULTS_SQL = `WITH input AS (
     SELECT * FROM jsonb_to_recordset($1::jsonb) AS i(id varchar, status varchar, pending_recipients jsonb, attempts int,
       set_last_error boolean, last_error text, sent_at timestamptz, set_next_attempt_at boolean, next_attempt_at timestamptz)
   ), moved AS (
     UPDATE messages m SET status = i.status, updated_at = now(),
       pending_recipients = COALESCE(i.pending_recipients, m.pending_recipients),
       attempts = COALESCE(i.attempts, m.attempts),
       last_error = CASE WHEN i.set_last_error THEN i.last_error ELSE m.last_error END,
       sent_at = COALESCE(m.sent_at, i.sent_at),
       next_attempt_at = CASE WHEN i.set_next_attempt_at THEN i.next_attempt_at ELSE m.next_attempt_at END
     FROM input i
     WHERE m.id = ANY($4::varchar[]) AND m.id = i.id AND (m.status = ANY($2::varchar[])) IS TRUE
     RETURNING m.id
   ), written AS (
     INSERT INTO message_events (message_id, type, recipient, detail, occurred_at)
     SELECT e.message_id, e.type, e.recipient, e.detail, e.occurred_at
     FROM jsonb_to_recordset($3::jsonb) AS e(n int, message_id varchar, type varchar, recipient varchar, detail text, occurred_at timestamptz)
     JOIN moved ON moved.id = e.message_id
     ORDER BY e.n
   )
   SELECT id FROM moved`;

/**
 * The message store as the delivery worker sees it: loads, status moves with their events, attempts and scheduled
 * claims, concurrent ones sharing statements. New messages are written by the outbox (AcceptanceRepository), events
 * reported after sending by LateEventsRepository.
 */
@Injectable()
export class DeliveryStore {
  private readonly deliveryLoads = new MicroBatch<string, DeliverableMessage | null>(
    (ids) => this.loadForDelivery(ids),
    MAX_DELIVERY_BATCH,
    MAX_CONCURRENT_DELIVERY_BATCHES,
  );
  private readonly attemptResults = new MicroBatch<AttemptResult, boolean>(
    (results) => this.writeAttemptResults(results),
    MAX_DELIVERY_BATCH,
    MAX_CONCURRENT_DELIVERY_BATCHES,
  );
  private readonly scheduledClaims = new MicroBatch<string, boolean>(
    (ids) => this.claimScheduledBatch(ids),
    MAX_DELIVERY_BATCH,
    MAX_CONCURRENT_DELIVERY_BATCHES,
  );
  private readonly contentLoads = new MicroBatch<string, MessageContent | null>(
    (ids) => this.loadContents(ids),
    MAX_DELIVERY_BATCH,
    MAX_CONCURRENT_DELIVERY_BATCHES,
  );
  /**
   * Content up to this size comes with the rest of a delivery load, so that a batch of MAX_DELIVERY_BATCH loads at
   * most DELIVERY_BATCH_BYTES; larger content is loaded on its own once the delivery's budget admits it.
   */
  private readonly inlineContentBytes: number;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    config: AppConfigService,
  ) {
    this.inlineContentBytes = Math.floor(config.env.DELIVERY_BATCH_BYTES / MAX_DELIVERY_BATCH);
  }

  /**
   * What a delivery attempt needs of a message, with its content unless that is large, and what sending it loads.
   * Concurrent loads share one query.
   */
  findForDelivery(messageId: string): Promise<DeliverableMessage | null> {
    return this.deliveryLoads.submit(messageId);
  }

  /** A message's content on its own, for a delivery whose budget admitted it (null when the message is gone). */
  contentForDelivery(messageId: string): Promise<MessageContent | null> {
    return this.contentLoads.submit(messageId);
  }

  private async loadForDelivery(messageIds: string[]): Promise<PromiseSettledResult<DeliverableMessage | null>[]> {
    // Messages accepted before content_bytes was kept are measured here; attachments they hold inline count.
    const rows: DeliverableRow[] = await this.dataSource.query(
      'SELECT m.id, m.account_id, m.status, m.from_address, m.from_domain, m.system_sender, m.pending_recipients, m.header_message_id, ' +
        'CASE WHEN w.content_bytes <= $2 THEN m.content END AS content, w.content_bytes + w.received_bytes + w.attachment_bytes AS load_bytes, ' +
        'm.attempts, m.sent_at, m.tracking, m.list_id, m.envelope_from, m.inbound_message_id, m.scheduled_for ' +
        'FROM messages m CROSS JOIN LATERAL (SELECT COALESCE(m.content_bytes, octet_length(m.content::text)) AS content_bytes, ' +
        'COALESCE((SELECT COALESCE(octet_length(i.source), 0) + octet_length(i.trace) FROM inbound_messages i WHERE i.id = m.inbound_message_id), 0) ' +
        'AS received_bytes, CASE WHEN EXISTS (SELECT 1 FROM message_attachments r WHERE r.message_id = m.id) THEN $3 ELSE 0 END AS attachment_bytes) w ' +
        'WHERE m.id = ANY($1::varchar[])',
      [[...new Set(messageIds)], this.inlineContentBytes, ATTACHMENT_READ_BYTES],
    );
    const byId = new Map(rows.map((row) => [row.id, row]));
    return messageIds.map((id): PromiseSettledResult<DeliverableMessage | null> => {
      const row = byId.get(id);
      if (!row) return { status: 'fulfilled', value: null };
      const value: DeliverableMessage = {
        id: row.id,
        accountId: row.account_id,
        status: row.status,
        fromAddress: row.from_address,
        fromDomain: row.from_domain,
        systemSender: row.system_sender,
        // Each caller gets its own copy: the rows of a duplicated id must not share arrays.
        pendingRecipients: [...row.pending_recipients],
        headerMessageId: row.header_message_id,
        content: row.content,
        loadBytes: Number(row.load_bytes),
        attempts: row.attempts,
        sentAt: row.sent_at,
        tracking: row.tracking,
        listId: row.list_id,
        envelopeFrom: row.envelope_from,
        inboundMessageId: row.inbound_message_id,
        scheduledFor: row.scheduled_for,
      };
      return { status: 'fulfilled', value };
    });
  }

  private async loadContents(messageIds: string[]): Promise<PromiseSettledResult<MessageContent | null>[]> {
    const rows: { id: string; content: MessageContent }[] = await this.dataSource.query(
      'SELECT id, content FROM messages WHERE id = ANY($1::varchar[])',
      [[...new Set(messageIds)]],
    );
    const byId = new Map(rows.map((row) => [row.id, row.content]));
    return allFulfilled(messageIds.map((id) => byId.get(id) ?? null));
  }

  /** A received message as it is forwarded: its trace fields on top of the bytes received (D-31); null when gone (or swept). */
  async receivedSource(inboundMessageId: string): Promise<Buffer | null> {
    const rows: { trace: string; source: Buffer }[] = await this.dataSource.query(
      'SELECT trace, source FROM inbound_messages WHERE id = $1 AND source IS NOT NULL',
      [inboundMessageId],
    );
    return rows.length ? Buffer.concat([Buffer.from(rows[0].trace, 'latin1'), rows[0].source]) : null;
  }

  /**
   * Moves a message from one of `from` to `changes.status` and records the events, in one statement;
   * false when the message was no longer in one of those states (cancelled meanwhile, done by another
   * worker), and then no event is written.
   */
  async transition(
    messageId: string,
    from: readonly MessageStatus[],
    changes: TransitionChanges,
    events: NewEvent[],
    only: { scheduledAfter?: Date } = {},
    /** Written in the same transaction if, and only if, the message moved (a credit of its usage). */
    companion?: (param: AddParam) => string,
  ): Promise<boolean> {
    const params: unknown[] = [messageId, [...from], changes.status];
    const where = ['id = $1', 'status = ANY($2::varchar[])'];
    if (only.scheduledAfter) where.push(`scheduled_for > $${params.push(only.scheduledAfter)}`);
    const set = ['status = $3', 'updated_at = now()'];
    if (changes.pendingRecipients) set.push(`pending_recipients = $${params.push(JSON.stringify(changes.pendingRecipients))}`);
    if (changes.attempts !== undefined) set.push(`attempts = $${params.push(changes.attempts)}`);
    if (changes.lastError !== undefined) set.push(`last_error = $${params.push(changes.lastError)}`);
    if (changes.sentAt) set.push(`sent_at = COALESCE(sent_at, $${params.push(changes.sentAt)})`);
    if (changes.nextAttemptAt !== undefined) set.push(`next_attempt_at = $${params.push(changes.nextAttemptAt)}::timestamptz`);
    const update = `UPDATE messages SET ${set.join(', ')} WHERE ${where.join(' AND ')} RETURNING id`;
    const values = events.map(
      (e) =>
        `($${params.push(e.type)}, $${params.push(e.recipient ?? null)}, $${params.push(e.detail ?? null)}, $${params.push(e.occurredAt ?? new Date())}::timestamptz)`,
    );
    // Selected from the CTE: a bare UPDATE … RETURNING comes back from TypeORM as [rows, count], never empty.
    const written = values.length
      ? `, written AS (
           INSERT INTO message_events (message_id, type, recipient, detail, occurred_at)
           SELECT moved.id, e.type, e.recipient, e.detail, e.occurred_at
           FROM moved CROSS JOIN (VALUES ${values.join(', ')}) AS e(type, recipient, detail, occurred_at)
         )`
      : '';
    const move = async (manager: EntityManager): Promise<boolean> => {
      const rows: { moved: number }[] = await manager.query(
        `WITH moved AS (${update})${written} SELECT count(*)::int AS moved FROM moved`,
        params,
      );
      return rows[0].moved > 0;
    };
    if (!companion) return counted(changes.status, await move(this.dataSource.manager));
    const moved = await this.dataSource.transaction(async (manager) => {
      if (!(await move(manager))) return false;
      const companionParams: unknown[] = [];
      await manager.query(
        companion((value) => `$${companionParams.push(value)}`),
        companionParams,
      );
      return true;
    });
    return counted(changes.status, moved);
  }

  /**
   * The result of a delivery attempt: transition(messageId, AWAITING_DELIVERY, changes, events), with the
   * results of concurrent attempts written by one statement.
   */
  recordAttempt(
    messageId: string,
    changes: TransitionChanges,
    events: NewEvent[],
    companion?: (param: AddParam) => string,
  ): Promise<boolean> {
    // With a companion (a forwarded message's failures) it goes alone, in a transaction: rare, and never lost.
    if (companion) return this.transition(messageId, AWAITING_DELIVERY, changes, events, {}, companion);
    return this.attemptResults.submit({ messageId, changes, events });
  }

  private async writeAttemptResults(results: AttemptResult[]): Promise<PromiseSettledResult<boolean>[]> {
    const alone = (r: AttemptResult) => settle(this.transition(r.messageId, AWAITING_DELIVERY, r.changes, r.events));
    // A message twice in one batch (a stalled job run again beside itself) would be updated once but get
    // both sets of events: repeats go alone, after the batch, as they would have without batching.
    const seen = new Set<string>();
    const distinct = results.filter((r) => !seen.has(r.messageId) && Boolean(seen.add(r.messageId)));
    let outcomes: PromiseSettledResult<boolean>[];
    if (distinct.length === 1) {
      outcomes = [await alone(distinct[0])];
    } else {
      try {
        const moved = await this.transitionMany(distinct);
        outcomes = distinct.map((r) => ({ status: 'fulfilled', value: moved.has(r.messageId) }));
      } catch {
        // One bad row must not fail the other attempts: each is written alone, and only its own fails.
        outcomes = await Promise.all(distinct.map(alone));
      }
    }
    const byResult = new Map(distinct.map((r, i) => [r, outcomes[i]]));
    const answers: PromiseSettledResult<boolean>[] = [];
    for (const r of results) answers.push(byResult.get(r) ?? (await alone(r)));
    return answers;
  }

  /** transition() from AWAITING_DELIVERY for several distinct messages in one statement; the ids that moved. */
  private async transitionMany(results: AttemptResult[]): Promise<Set<string>> {
    const rows: AttemptRow[] = results.map(({ messageId, changes }) => ({
      id: messageId,
      status: changes.status,
      pending_recipients: changes.pendingRecipients ?? null,
      attempts: changes.attempts ?? null,
      set_last_error: changes.lastError !== undefined,
      last_error: changes.lastError ?? null,
      sent_at: changes.sentAt ?? null,
      set_next_attempt_at: changes.nextAttemptAt !== undefined,
      next_attempt_at: changes.nextAttemptAt ?? null,
    }));
    let n = 0;
    const events: AttemptEventRow[] = results.flatMap(({ messageId, events }) =>
      events.map((e) => ({
        n: n++,
        message_id: messageId,
        type: e.type,
        recipient: e.recipient ?? null,
        detail: e.detail ?? null,
        occurred_at: e.occurredAt ?? new Date(),
      })),
    );
    const moved: { id: string }[] = await this.dataSource.query(ATTEMPT_RESULTS_SQL, [
      JSON.stringify(rows),
      [...AWAITING_DELIVERY],
      JSON.stringify(events),
      rows.map((row) => row.id),
    ]);
    const movedIds = new Set(moved.map((r) => r.id));
    for (const row of rows) if (movedIds.has(row.id)) emails.inc({ status: row.status });
    return movedIds;
  }

  /**
   * A worker takes a scheduled message that is due (`scheduled` → `queued`) right before sending it; false when
   * it is no longer scheduled (cancelled). A cancel and a worker thus never both win. Concurrent claims share
   * one statement.
   */
  claimScheduled(messageId: string): Promise<boolean> {
    return this.scheduledClaims.submit(messageId);
  }

  private async claimScheduledBatch(ids: string[]): Promise<PromiseSettledResult<boolean>[]> {
    // A bare UPDATE … RETURNING comes back from TypeORM as [rows, count]; selecting from the CTE gives rows.
    const claimed: { id: string }[] = await this.dataSource.query(
      `WITH claimed AS (
         UPDATE messages SET status = 'queued', updated_at = now() WHERE id = ANY($1::varchar[]) AND status = 'scheduled' RETURNING id
       )
       SELECT id FROM claimed`,
      [[...new Set(ids)]],
    );
    const moved = new Set(claimed.map((row) => row.id));
    emails.inc({ status: 'queued' }, moved.size);
    // A message asked for twice in one batch (a stalled job run beside itself) is claimed by the first only.
    return allFulfilled(ids.map((id) => moved.delete(id)));
  }

  /**
   * An attempt that ended in an error of ours (not an SMTP answer) still counts: the message waiting for
   * delivery gets attempts + 1, `deferred` (or `failed` when `final`) and an event of that type; the detail of
   * a final one says how many attempts were made. False when the message was not waiting for delivery. A final one
   * records the pending destinations of a forwarded message as failures for its sender's notification.
   */
  async countFailedAttempt(messageId: string, error: string, final: boolean, nextAttemptAt: Date | null = null): Promise<boolean> {
    const status: MessageStatus = final ? 'failed' : 'deferred';
    const rows: { moved: number }[] = await this.dataSource.query(
      `WITH moved AS (
         UPDATE messages SET status = $2, attempts = attempts + 1, last_error = $3, next_attempt_at = $6::timestamptz, updated_at = now()
         WHERE id = $1 AND status = ANY($4::varchar[])
         RETURNING id, attempts, inbound_message_id, envelope_from, pending_recipients
       ), written AS (
         INSERT INTO message_events (message_id, type, detail, occurred_at)
         SELECT id, $2, CASE WHEN $5 THEN 'gave up after ' || attempts || ' attempts: ' || $3 ELSE $3 END, now() FROM moved
       ), failures AS (${expiredPendingCte('moved', '$5')})
       SELECT count(*)::int AS moved FROM moved`,
      [messageId, status, error, [...AWAITING_DELIVERY], final, nextAttemptAt],
    );
    return counted(status, rows[0].moved > 0);
  }
}

/** Counts a message that entered `status` (mailroom_emails_total); passes `moved` through. */
function counted(status: MessageStatus, moved: boolean): boolean {
  if (moved) emails.inc({ status });
  return moved;
}
