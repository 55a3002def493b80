import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { allFulfilled, MicroBatch, settle } from '../common/micro-batch';
import { emails } from '../metrics/metrics';
import type { NewEvent } from './message-event.entity';
import type { Message, MessageStatus } from './message.entity';

/** A message as events reported after sending (provider events) find it. */
export type ReferencedMessage = Pick<Message, 'id' | 'accountId' | 'status' | 'recipients' | 'headerMessageId'>;

interface ReferencedRow {
  id: string;
  account_id: string;
  status: MessageStatus;
  recipients: string[];
  header_message_id: string;
}

/** An event reported after sending, and the status change it makes (checked against the row when written). */
export interface LateEvent {
  messageId: string;
  event: NewEvent;
  move?: { from: readonly MessageStatus[]; to: MessageStatus };
}

/** Tracking hits arriving together share a statement. */
const MAX_BATCH = 100;
const MAX_CONCURRENT_BATCHES = 2;

/**
 * Events reported after a message was sent (tracking hits, the provider's delivered, bounced, complained), with
 * the status moves they make, on messages of any account.
 */
@Injectable()
export class LateEventsRepository {
  private readonly lateEvents = new MicroBatch<LateEvent, void>(
    (entries) => this.recordLateEventBatch(entries),
    MAX_BATCH,
    MAX_CONCURRENT_BATCHES,
  );

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /**
   * Messages of any account named by id or by RFC Message-ID (with its angle brackets), in one query, in `manager`'s
   * transaction (the call that applies their events holds its one connection; a second one from the pool could wait
   * for ever on calls that each hold one).
   */
  async findByReferences(manager: EntityManager, ids: string[], headerMessageIds: string[]): Promise<ReferencedMessage[]> {
    const rows: ReferencedRow[] = await manager.query(
      'SELECT id, account_id, status, recipients, header_message_id FROM messages ' +
        'WHERE id = ANY($1::varchar[]) OR header_message_id = ANY($2::varchar[])',
      [[...new Set(ids)], [...new Set(headerMessageIds)]],
    );
    return rows.map((row) => ({
      id: row.id,
      accountId: row.account_id,
      status: row.status,
      recipients: row.recipients,
      headerMessageId: row.header_message_id,
    }));
  }

  /** One event reported after sending (a tracking hit): recordLateEvents, concurrent ones sharing the statement. */
  recordLateEvent(entry: LateEvent): Promise<void> {
    return this.lateEvents.submit(entry);
  }

  /** If the shared statement fails, each is written alone, so that a bad row fails its own caller only. */
  private async recordLateEventBatch(entries: LateEvent[]): Promise<PromiseSettledResult<void>[]> {
    if (entries.length > 1) {
      try {
        countStatusMoves(await this.recordLateEvents(entries));
        return allFulfilled(entries.map(() => undefined));
      } catch {
        // fall through: one by one
      }
    }
    return Promise.all(entries.map((entry) => settle(this.recordLateEvents([entry]).then(countStatusMoves))));
  }

  /**
   * Events reported after sending, in one statement, written in the order given, with the status changes
   * they make. An event's time is kept between the message's sent_at and now, so that a provider's clock
   * cannot list it before `sent` or after what happens next here. One move per message: the first given.
   * Events of messages deleted meanwhile are dropped, and so is an unsubscribe of an address the message
   * has one already (a unique index). In `manager`'s transaction when given (a provider's call, applied whole).
   * Returns the statuses messages moved to, for the caller to count once they are committed (countStatusMoves).
   */
  async recordLateEvents(entries: LateEvent[], manager: EntityManager = this.dataSource.manager): Promise<MessageStatus[]> {
    if (entries.length === 0) return [];
    const moves = new Map<string, { id: string; from: MessageStatus[]; to: MessageStatus }>();
    for (const { messageId, move } of entries) {
      if (move && !moves.has(messageId)) moves.set(messageId, { id: messageId, from: [...move.from], to: move.to });
    }
    const events = entries.map(({ messageId, event }, n) => ({
      n,
      message_id: messageId,
      type: event.type,
      recipient: event.recipient ?? null,
      detail: event.detail ?? null,
      machine: event.machine ?? false,
      occurred_at: event.occurredAt ?? null,
    }));
    const moved: { status: MessageStatus }[] = await manager.query(
      `WITH moved AS (
         UPDATE messages m SET status = i.to_status, updated_at = now()
         FROM jsonb_to_recordset($1::jsonb) AS i(id varchar, from_statuses jsonb, to_status varchar)
         WHERE m.id = i.id AND i.from_statuses ? m.status
         RETURNING m.status
       ), written AS (
         INSERT INTO message_events (message_id, type, recipient, detail, machine, occurred_at)
         SELECT e.message_id, e.type, e.recipient, e.detail, e.machine, LEAST(GREATEST(COALESCE(e.occurred_at, now()), m.sent_at), now())
         FROM jsonb_to_recordset($2::jsonb) AS e(n int, message_id varchar, type varchar, recipient varchar, detail text, machine boolean, occurred_at timestamptz)
         JOIN messages m ON m.id = e.message_id
         ORDER BY e.n
         ON CONFLICT DO NOTHING
       )
       SELECT status FROM moved`,
      [JSON.stringify([...moves.values()].map((m) => ({ id: m.id, from_statuses: m.from, to_status: m.to }))), JSON.stringify(events)],
    );
    return moved.map(({ status }) => status);
  }

  /**
   * A recipient's event reported after sending (a bounce) that moves the message only once every recipient
   * has had one of its type: the event (times as in recordLateEvents), and the `move` when this was the last.
   * The message row is locked first, so concurrent events of its recipients each see the others'. Returns the
   * status the message moved to, or null. In `manager`'s transaction when given (the caller counts the move once it
   * is committed, countStatusMoves), else in one of its own (counted here).
   */
  async recordEveryRecipientEvent(
    entry: LateEvent & { event: { recipient: string } },
    manager?: EntityManager,
  ): Promise<MessageStatus | null> {
    if (!manager) {
      const moved = await this.dataSource.transaction((own) => this.recordEveryRecipientEvent(entry, own));
      countStatusMoves(moved ? [moved] : []);
      return moved;
    }
    const { messageId, event, move } = entry;
    await manager.query('SELECT 1 FROM messages WHERE id = $1 FOR UPDATE', [messageId]);
    // A statement of its own after the lock: its snapshot includes the events committed while we waited.
    const rows: { moved: number }[] = await manager.query(
      `WITH moved AS (
         UPDATE messages m SET status = $6, updated_at = now()
         WHERE m.id = $1 AND m.status = ANY($5::varchar[]) AND NOT EXISTS (
           SELECT 1 FROM jsonb_array_elements_text(m.recipients) AS r(address)
           WHERE lower(r.address) <> lower($2) AND NOT EXISTS (
             SELECT 1 FROM message_events b WHERE b.message_id = $1 AND b.type = $7 AND lower(b.recipient) = lower(r.address)
           )
         )
         RETURNING m.id
       ), written AS (
         INSERT INTO message_events (message_id, type, recipient, detail, occurred_at)
         SELECT m.id, $7, $2, $3, LEAST(GREATEST(COALESCE($4::timestamptz, now()), m.sent_at), now()) FROM messages m WHERE m.id = $1
       )
       SELECT count(*)::int AS moved FROM moved`,
      [
        messageId,
        event.recipient,
        event.detail ?? null,
        event.occurredAt ?? null,
        move ? [...move.from] : [],
        move?.to ?? null,
        event.type,
      ],
    );
    return rows[0].moved > 0 && move ? move.to : null;
  }
}

/** Counts status moves (the emails metric): only once they are committed, so that a rolled-back call counts nothing. */
export function countStatusMoves(statuses: readonly MessageStatus[]): void {
  for (const status of statuses) emails.inc({ status });
}
