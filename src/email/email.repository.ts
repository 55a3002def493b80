import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { MessageEvent, MessageEventType } from './message-event.entity';
import { AWAITING_DELIVERY, Message, MessageStatus } from './message.entity';

export interface NewEvent {
  type: MessageEventType;
  recipient?: string | null;
  detail?: string | null;
  occurredAt?: Date;
}

export type DeliverableMessage = Pick<
  Message,
  'id' | 'accountId' | 'status' | 'fromAddress' | 'fromDomain' | 'pendingRecipients' | 'headerMessageId' | 'content' | 'attempts' | 'sentAt'
>;

interface DeliverableRow {
  id: string;
  account_id: string;
  status: MessageStatus;
  from_address: string;
  from_domain: string;
  pending_recipients: string[];
  header_message_id: string;
  content: Message['content'];
  attempts: number;
  sent_at: Date | null;
}

export interface TransitionChanges {
  status: MessageStatus;
  pendingRecipients?: string[];
  attempts?: number;
  lastError?: string | null;
  sentAt?: Date;
}

interface PendingInsert {
  message: Message;
  events: NewEvent[];
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** Inserts that arrive while a flush runs wait for the next one; so busy periods commit many at once. */
const MAX_BATCH = 200;
const MAX_CONCURRENT_FLUSHES = 4;

/**
 * Queries and transactions for messages and their events. New messages are written by group commit: the
 * inserts of concurrent requests share one transaction (two multi-row INSERTs), and each caller's promise
 * resolves only after that transaction committed (D-16).
 */
@Injectable()
export class EmailRepository {
  private readonly waiting: PendingInsert[] = [];
  private flushing = 0;
  private flushScheduled = false;

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** Resolves once the message and its events are committed. */
  insert(message: Message, events: NewEvent[]): Promise<void> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ message, events, resolve, reject });
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(() => {
          this.flushScheduled = false;
          this.flush();
        });
      }
    });
  }

  private flush(): void {
    while (this.waiting.length > 0 && this.flushing < MAX_CONCURRENT_FLUSHES) {
      const batch = this.waiting.splice(0, MAX_BATCH);
      this.flushing++;
      this.writeBatch(batch)
        .then(
          () => batch.forEach((p) => p.resolve()),
          (err) => batch.forEach((p) => p.reject(err)),
        )
        .finally(() => {
          this.flushing--;
          this.flush();
        });
    }
  }

  /** One statement (so one round trip and atomic without BEGIN/COMMIT): the messages, then their events. */
  private async writeBatch(batch: PendingInsert[]): Promise<void> {
    const params: unknown[] = [];
    const placeholders = (values: unknown[]) => `(${values.map((v) => `$${params.push(v)}`).join(', ')})`;
    const messageRows = batch.map(({ message: m }) =>
      placeholders([
        m.id,
        m.accountId,
        m.status,
        m.fromAddress,
        m.fromDomain,
        m.subject,
        JSON.stringify(m.recipients),
        JSON.stringify(m.pendingRecipients),
        JSON.stringify(m.suppressedRecipients),
        m.headerMessageId,
        JSON.stringify(m.content),
        m.priority,
        m.scheduledFor,
        m.tracking === null ? null : JSON.stringify(m.tracking),
        m.listId,
        m.templateName,
      ]),
    );
    const eventRows = batch.flatMap(({ message, events }) =>
      events.map((e) => placeholders([message.id, e.type, e.recipient ?? null, e.detail ?? null, e.occurredAt ?? new Date()])),
    );
    const insertMessages =
      'INSERT INTO messages (id, account_id, status, from_address, from_domain, subject, recipients, pending_recipients, ' +
      'suppressed_recipients, header_message_id, content, priority, scheduled_for, tracking, list_id, template_name) ' +
      `VALUES ${messageRows.join(', ')}`;
    const sql = eventRows.length
      ? `WITH inserted AS (${insertMessages}) INSERT INTO message_events (message_id, type, recipient, detail, occurred_at) VALUES ${eventRows.join(', ')}`
      : insertMessages;
    await this.dataSource.query(sql, params);
  }

  findForAccount(accountId: string, messageId: string): Promise<Message | null> {
    return this.dataSource.getRepository(Message).findOne({
      where: { id: messageId, accountId },
      select: { id: true, accountId: true, status: true },
    });
  }

  /** What a delivery attempt needs of a message. */
  async findForDelivery(messageId: string): Promise<DeliverableMessage | null> {
    const rows: DeliverableRow[] = await this.dataSource.query(
      'SELECT id, account_id, status, from_address, from_domain, pending_recipients, header_message_id, content, attempts, sent_at ' +
        'FROM messages WHERE id = $1',
      [messageId],
    );
    const row = rows[0];
    if (!row) return null;
    return {
      id: row.id,
      accountId: row.account_id,
      status: row.status,
      fromAddress: row.from_address,
      fromDomain: row.from_domain,
      pendingRecipients: row.pending_recipients,
      headerMessageId: row.header_message_id,
      content: row.content,
      attempts: row.attempts,
      sentAt: row.sent_at,
    };
  }

  events(messageId: string): Promise<MessageEvent[]> {
    return this.dataSource.getRepository(MessageEvent).find({ where: { messageId }, order: { occurredAt: 'ASC', id: 'ASC' } });
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
  ): Promise<boolean> {
    const params: unknown[] = [messageId, [...from], changes.status];
    const where = ['id = $1', 'status = ANY($2::varchar[])'];
    if (only.scheduledAfter) where.push(`scheduled_for > $${params.push(only.scheduledAfter)}`);
    const set = ['status = $3', 'updated_at = now()'];
    if (changes.pendingRecipients) set.push(`pending_recipients = $${params.push(JSON.stringify(changes.pendingRecipients))}`);
    if (changes.attempts !== undefined) set.push(`attempts = $${params.push(changes.attempts)}`);
    if (changes.lastError !== undefined) set.push(`last_error = $${params.push(changes.lastError)}`);
    if (changes.sentAt) set.push(`sent_at = COALESCE(sent_at, $${params.push(changes.sentAt)})`);
    const update = `UPDATE messages SET ${set.join(', ')} WHERE ${where.join(' AND ')} RETURNING id`;
    if (events.length === 0) {
      const rows: unknown[] = await this.dataSource.query(update, params);
      return rows.length > 0;
    }
    const values = events.map(
      (e) => `($${params.push(e.type)}, $${params.push(e.recipient ?? null)}, $${params.push(e.detail ?? null)}, $${params.push(e.occurredAt ?? new Date())}::timestamptz)`,
    );
    const rows: { moved: number }[] = await this.dataSource.query(
      `WITH moved AS (${update}), written AS (
         INSERT INTO message_events (message_id, type, recipient, detail, occurred_at)
         SELECT moved.id, e.type, e.recipient, e.detail, e.occurred_at
         FROM moved CROSS JOIN (VALUES ${values.join(', ')}) AS e(type, recipient, detail, occurred_at)
       )
       SELECT count(*)::int AS moved FROM moved`,
      params,
    );
    return rows[0].moved > 0;
  }

  /**
   * A page of messages that should have a queue job and have not changed for a while, in id order after
   * `afterId` (the sweeper walks them all).
   */
  awaitingDelivery(
    olderThan: Date,
    afterId: string,
    limit: number,
  ): Promise<Pick<Message, 'id' | 'status' | 'priority' | 'scheduledFor' | 'attempts'>[]> {
    return this.dataSource
      .getRepository(Message)
      .createQueryBuilder('m')
      .select(['m.id', 'm.status', 'm.priority', 'm.scheduledFor', 'm.attempts'])
      .where('m.status IN (:...statuses)', { statuses: AWAITING_DELIVERY })
      .andWhere('m.updatedAt < :olderThan', { olderThan })
      .andWhere('m.id > :afterId', { afterId })
      .orderBy('m.id', 'ASC')
      .limit(limit)
      .getMany();
  }
}
