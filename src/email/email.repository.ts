import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { MessageEvent, MessageEventType } from './message-event.entity';
import { AWAITING_DELIVERY, Message, MessageStatus } from './message.entity';
import { allFulfilled, MicroBatch, settle } from '../common/micro-batch';
import { emails } from '../metrics/metrics';
import { Metering, usageStatement } from '../quotas/usage-statement';
import { IDEMPOTENCY_RECORD_COLUMNS, IdempotentAnswer, idempotencyRecordValues } from '../common/idempotency/idempotency.store';

export interface NewEvent {
  type: MessageEventType;
  recipient?: string | null;
  detail?: string | null;
  /** Made by a machine (an open by a privacy proxy, a link scanner's click). */
  machine?: boolean;
  occurredAt?: Date;
}

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
  | 'content'
  | 'attempts'
  | 'sentAt'
  | 'tracking'
  | 'listId'
  | 'envelopeFrom'
  | 'inboundMessageId'
  | 'scheduledFor'
>;

interface DeliverableRow {
  id: string;
  account_id: string;
  status: MessageStatus;
  from_address: string;
  from_domain: string;
  system_sender: boolean;
  pending_recipients: string[];
  header_message_id: string;
  content: Message['content'];
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
}

/** A message to accept, with the events it starts with. */
export interface MessageWithEvents {
  message: Message;
  events: NewEvent[];
}

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

/** Adds a value to the statement's parameters and gives its placeholder (`$7`). */
export type AddParam = (value: unknown) => string;

/** A row to insert; the rows of one table with the same columns, of every request in the batch, share one INSERT. */
export interface CompanionRow {
  table: string;
  values: Record<string, unknown>;
}

/**
 * What commits together with the messages: what caused them (a form submission) and what they cause (an
 * outbox event). A row to insert, or any data-modifying statement (an UPDATE) written with `param`.
 */
export type CompanionStatement = CompanionRow | ((param: AddParam) => string);

/** What one request accepts in one commit. */
export interface Acceptance {
  messages: MessageWithEvents[];
  statements?: CompanionStatement[];
  idempotency?: IdempotentAnswer;
  /**
   * By default one email per recipient of `messages`. Form mail passes its submission as well as its emails
   * (every email sent for an account is metered, D-37), a list send its subscribers when accepted, and its
   * pages nothing (null).
   */
  metering?: Metering | null;
}

/** The metering of an acceptance: as given, or one email per recipient of its messages. */
export function meteringOf(acceptance: Acceptance): Metering | null {
  if (acceptance.metering !== undefined) return acceptance.metering;
  const { messages } = acceptance;
  if (messages.length === 0) return null;
  return { accountId: messages[0].message.accountId, emails: recipientCount(messages), submissions: 0 };
}

/** The recipients of the messages: the emails they count against a quota. */
export function recipientCount(messages: readonly MessageWithEvents[]): number {
  return messages.reduce((sum, { message }) => sum + message.recipients.length, 0);
}

interface PendingAcceptance extends Acceptance {
  /** Each message's content as JSON, made once: it is written, and it weighs the batch. */
  contentJson: string[];
  /** What the statement carries for it: the content, and the binary values of its companion rows (a received message). */
  bytes: number;
}

/** Inserts that arrive while a flush runs wait for the next one; so busy periods commit many at once. */
const MAX_BATCH = 200;
/** A statement carries at most this much content (one bigger message goes alone): attachments make rows of 35 MB. */
const MAX_BATCH_BYTES = 16 * 1024 * 1024;
const MAX_CONCURRENT_FLUSHES = 4;

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
       set_last_error boolean, last_error text, sent_at timestamptz)
   ), moved AS (
     UPDATE messages m SET status = i.status, updated_at = now(),
       pending_recipients = COALESCE(i.pending_recipients, m.pending_recipients),
       attempts = COALESCE(i.attempts, m.attempts),
       last_error = CASE WHEN i.set_last_error THEN i.last_error ELSE m.last_error END,
       sent_at = COALESCE(m.sent_at, i.sent_at)
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
 * Queries and transactions for messages and their events. New messages are written by group commit: the
 * inserts of concurrent requests share one transaction (two multi-row INSERTs), and each caller's promise
 * resolves only after that transaction committed (D-16).
 */
@Injectable()
export class EmailRepository {
  private readonly inserts = new MicroBatch<PendingAcceptance, void>(
    (batch) => this.insertBatch(batch),
    MAX_BATCH,
    MAX_CONCURRENT_FLUSHES,
    {
      weigh: (item) => item.bytes,
      max: MAX_BATCH_BYTES,
    },
  );
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
  private readonly lateEvents = new MicroBatch<LateEvent, void>(
    (entries) => this.recordLateEventBatch(entries),
    MAX_DELIVERY_BATCH,
    MAX_CONCURRENT_DELIVERY_BATCHES,
  );
  private readonly scheduledClaims = new MicroBatch<string, boolean>(
    (ids) => this.claimScheduledBatch(ids),
    MAX_DELIVERY_BATCH,
    MAX_CONCURRENT_DELIVERY_BATCHES,
  );

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /**
   * Resolves once the messages, their events, the companion statements and the idempotent answer are
   * committed (a key used already fails this acceptance alone, with a unique violation on the record's key).
   */
  insert(acceptance: Acceptance): Promise<void> {
    const contentJson = acceptance.messages.map(({ message }) => JSON.stringify(message.content));
    const bytes = contentJson.reduce((sum, json) => sum + json.length, 0) + companionBytes(acceptance.statements ?? []);
    return this.inserts.submit({ ...acceptance, contentJson, bytes });
  }

  /**
   * The messages of concurrent requests, of any accounts, in one statement. If it fails, each is written
   * alone, so a row the database refuses (or a reused Idempotency-Key) fails its own request only.
   */
  private async insertBatch(batch: PendingAcceptance[]): Promise<PromiseSettledResult<void>[]> {
    if (batch.length > 1) {
      try {
        await this.writeBatch(batch);
        return allFulfilled(batch.map(() => undefined));
      } catch {
        // fall through: one by one
      }
    }
    return Promise.all(batch.map((item) => settle(this.writeBatch([item]))));
  }

  /** One statement (so one round trip and atomic without BEGIN/COMMIT): the messages, their events, the companions, the idempotent answers. */
  private async writeBatch(batch: PendingAcceptance[]): Promise<void> {
    const params: unknown[] = [];
    const param: AddParam = (value) => `$${params.push(value)}`;
    const placeholders = (values: unknown[]) => `(${values.map(param).join(', ')})`;
    const messages = batch.flatMap((item) => item.messages.map((entry, i) => ({ ...entry, contentJson: item.contentJson[i] })));
    const messageRows = messages.map(({ message: m, contentJson }) =>
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
        contentJson,
        m.priority,
        m.scheduledFor,
        m.tracking === null ? null : JSON.stringify(m.tracking),
        m.listId,
        m.templateName,
        m.systemSender ?? false,
        m.metadata === null || m.metadata === undefined ? null : JSON.stringify(m.metadata),
        m.envelopeFrom ?? null,
        m.inboundMessageId ?? null,
      ]),
    );
    const eventRows = messages.flatMap(({ message, events }) =>
      events.map((e) => placeholders([message.id, e.type, e.recipient ?? null, e.detail ?? null, e.occurredAt ?? new Date()])),
    );
    const answerRows = batch.flatMap(({ idempotency }) => (idempotency ? [placeholders(idempotencyRecordValues(idempotency))] : []));
    const usage = usageStatement(batch.map(meteringOf), param);
    const statements = [
      ...(messageRows.length
        ? [
            'INSERT INTO messages (id, account_id, status, from_address, from_domain, subject, recipients, pending_recipients, ' +
              'suppressed_recipients, header_message_id, content, priority, scheduled_for, tracking, list_id, template_name, system_sender, metadata, ' +
              'envelope_from, inbound_message_id) ' +
              `VALUES ${messageRows.join(', ')}`,
          ]
        : []),
      ...(eventRows.length
        ? [`INSERT INTO message_events (message_id, type, recipient, detail, occurred_at) VALUES ${eventRows.join(', ')}`]
        : []),
      ...companionStatements(
        batch.flatMap(({ statements: companions }) => companions ?? []),
        param,
      ),
      ...(usage ? [usage] : []),
      ...(answerRows.length ? [`INSERT INTO idempotency_records (${IDEMPOTENCY_RECORD_COLUMNS}) VALUES ${answerRows.join(', ')}`] : []),
    ];
    if (statements.length === 0) return;
    // Every data-modifying WITH clause runs, referenced or not: the statements commit together.
    const last = statements.pop()!;
    const sql = statements.length ? `WITH ${statements.map((statement, i) => `w${i} AS (${statement})`).join(', ')} ${last}` : last;
    await this.dataSource.query(sql, params);
    for (const { message } of messages) emails.inc({ status: message.status });
  }

  findForAccount(accountId: string, messageId: string): Promise<Message | null> {
    return this.dataSource.getRepository(Message).findOne({
      where: { id: messageId, accountId },
      select: { id: true, accountId: true, status: true, recipients: true, createdAt: true },
    });
  }

  /** What a delivery attempt needs of a message. Concurrent loads share one query. */
  findForDelivery(messageId: string): Promise<DeliverableMessage | null> {
    return this.deliveryLoads.submit(messageId);
  }

  private async loadForDelivery(messageIds: string[]): Promise<PromiseSettledResult<DeliverableMessage | null>[]> {
    const rows: DeliverableRow[] = await this.dataSource.query(
      'SELECT id, account_id, status, from_address, from_domain, system_sender, pending_recipients, header_message_id, content, attempts, sent_at, ' +
        'tracking, list_id, envelope_from, inbound_message_id, scheduled_for ' +
        'FROM messages WHERE id = ANY($1::varchar[])',
      [[...new Set(messageIds)]],
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

  /** A received message as it is forwarded: its trace fields on top of the bytes received (D-31); null when gone. */
  async receivedSource(inboundMessageId: string): Promise<Buffer | null> {
    const rows: { trace: string; source: Buffer }[] = await this.dataSource.query(
      'SELECT trace, source FROM inbound_messages WHERE id = $1',
      [inboundMessageId],
    );
    return rows.length ? Buffer.concat([Buffer.from(rows[0].trace, 'latin1'), rows[0].source]) : null;
  }

  events(messageId: string): Promise<MessageEvent[]> {
    return this.dataSource.getRepository(MessageEvent).find({ where: { messageId }, order: { occurredAt: 'ASC', id: 'ASC' } });
  }

  /** Messages of any account named by id or by RFC Message-ID (with its angle brackets), in one query. */
  async findByReferences(ids: string[], headerMessageIds: string[]): Promise<ReferencedMessage[]> {
    const rows: ReferencedRow[] = await this.dataSource.query(
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
        await this.recordLateEvents(entries);
        return allFulfilled(entries.map(() => undefined));
      } catch {
        // fall through: one by one
      }
    }
    return Promise.all(entries.map((entry) => settle(this.recordLateEvents([entry]))));
  }

  /**
   * Events reported after sending, in one statement, written in the order given, with the status changes
   * they make. An event's time is kept between the message's sent_at and now, so that a provider's clock
   * cannot list it before `sent` or after what happens next here. One move per message: the first given.
   * Events of messages deleted meanwhile are dropped, and so is an unsubscribe of an address the message
   * has one already (a unique index).
   */
  async recordLateEvents(entries: LateEvent[]): Promise<void> {
    if (entries.length === 0) return;
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
    const moved: { status: MessageStatus }[] = await this.dataSource.query(
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
    for (const { status } of moved) emails.inc({ status });
  }

  /**
   * A recipient's event reported after sending (a bounce) that moves the message only once every recipient
   * has had one of its type: the event (times as in recordLateEvents), and the `move` when this was the last.
   * The message row is locked first, so concurrent events of its recipients each see the others'. True when
   * the message moved.
   */
  async recordEveryRecipientEvent(entry: LateEvent & { event: { recipient: string } }): Promise<boolean> {
    const { messageId, event, move } = entry;
    return this.dataSource.transaction(async (manager) => {
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
      if (rows[0].moved > 0 && move) emails.inc({ status: move.to });
      return rows[0].moved > 0;
    });
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
  recordAttempt(messageId: string, changes: TransitionChanges, events: NewEvent[]): Promise<boolean> {
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
   * a final one says how many attempts were made. False when the message was not waiting for delivery.
   */
  async countFailedAttempt(messageId: string, error: string, final: boolean): Promise<boolean> {
    const status: MessageStatus = final ? 'failed' : 'deferred';
    const rows: { moved: number }[] = await this.dataSource.query(
      `WITH moved AS (
         UPDATE messages SET status = $2, attempts = attempts + 1, last_error = $3, updated_at = now()
         WHERE id = $1 AND status = ANY($4::varchar[])
         RETURNING id, attempts
       ), written AS (
         INSERT INTO message_events (message_id, type, detail, occurred_at)
         SELECT id, $2, CASE WHEN $5 THEN 'gave up after ' || attempts || ' attempts: ' || $3 ELSE $3 END, now() FROM moved
       )
       SELECT count(*)::int AS moved FROM moved`,
      [messageId, status, error, [...AWAITING_DELIVERY], final],
    );
    return counted(status, rows[0].moved > 0);
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

/** The bytes of the binary values (Buffers) of companion rows. */
function companionBytes(companions: CompanionStatement[]): number {
  let bytes = 0;
  for (const companion of companions) {
    if (typeof companion === 'function') continue;
    for (const value of Object.values(companion.values)) if (Buffer.isBuffer(value)) bytes += value.length;
  }
  return bytes;
}

/** The companions as statements: their rows grouped into one multi-row INSERT per table and columns. */
function companionStatements(companions: CompanionStatement[], param: AddParam): string[] {
  const statements: string[] = [];
  const inserts = new Map<string, string[]>();
  for (const companion of companions) {
    if (typeof companion === 'function') {
      statements.push(companion(param));
      continue;
    }
    const target = `${companion.table} (${Object.keys(companion.values).join(', ')})`;
    const rows = inserts.get(target) ?? [];
    inserts.set(target, rows);
    rows.push(`(${Object.values(companion.values).map(param).join(', ')})`);
  }
  return [...[...inserts].map(([target, rows]) => `INSERT INTO ${target} VALUES ${rows.join(', ')}`), ...statements];
}

/** Counts a message that entered `status` (mailroom_emails_total); passes `moved` through. */
function counted(status: MessageStatus, moved: boolean): boolean {
  if (moved) emails.inc({ status });
  return moved;
}
