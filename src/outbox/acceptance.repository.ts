import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { IDEMPOTENCY_RECORD_COLUMNS, IdempotentAnswer, idempotencyRecordValues } from '../common/idempotency/idempotency.store';
import { allFulfilled, MicroBatch, settle } from '../common/micro-batch';
import { emails } from '../metrics/metrics';
import { Metering, usageStatement } from '../quotas/usage-statement';
import { type AttachmentUpload, isStored } from './attachments/attachment-content';
import type { NewEvent } from './message-event.entity';
import type { Message } from './message.entity';

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

/** A message to accept, with the events it starts with. */
export interface MessageWithEvents {
  message: Message;
  events: NewEvent[];
  /** The bytes of the attachments its content refers to, stored before it is accepted (OutboxService.accept). */
  attachments?: AttachmentUpload[];
}

/** What one request accepts in one commit. */
export interface Acceptance {
  messages: MessageWithEvents[];
  statements?: CompanionStatement[];
  /** Bytes the statements refer to (a form submission's stored uploads), stored with the messages' own. */
  attachments?: AttachmentUpload[];
  idempotency?: IdempotentAnswer;
  /**
   * By default one email per recipient of `messages`. Form mail passes its submission as well as its emails
   * (every email sent for an account is metered, D-37), a list send its subscribers when accepted, and its
   * pages what they make beyond them (null: nothing).
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
/**
 * A statement carries at most this much content (one bigger message goes alone): bodies of up to 10 MB, and the
 * companion rows of a forwarded message, up to 25 MB.
 */
const MAX_BATCH_BYTES = 16 * 1024 * 1024;
const MAX_CONCURRENT_FLUSHES = 4;

/**
 * Writes what requests accept (D-16): each request's messages, their events, what commits with them and its
 * idempotent answer and usage, all in one statement, shared by concurrent requests of any accounts.
 */
@Injectable()
export class AcceptanceRepository {
  private readonly inserts = new MicroBatch<PendingAcceptance, void>(
    (batch) => this.insertBatch(batch),
    MAX_BATCH,
    MAX_CONCURRENT_FLUSHES,
    {
      weigh: (item) => item.bytes,
      max: MAX_BATCH_BYTES,
    },
  );

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /**
   * Resolves once the messages, their events, the companion statements and the idempotent answer are
   * committed (a key used already fails this acceptance alone, with a unique violation on the record's key).
   */
  insert(acceptance: Acceptance): Promise<void> {
    return this.inserts.submit(pending(acceptance));
  }

  /**
   * The same statement, in the caller's transaction (alone, not batched): what it commits with is read and locked in
   * that transaction first (a delivery status notification and the failures it reports). Metering is the caller's.
   */
  insertWithin(manager: EntityManager, acceptance: Acceptance): Promise<void> {
    return this.writeBatch([pending(acceptance)], manager);
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
  private async writeBatch(batch: PendingAcceptance[], runner: Pick<EntityManager, 'query'> = this.dataSource): Promise<void> {
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
        Buffer.byteLength(contentJson),
      ]),
    );
    // Each message's hold on the attachment bytes it refers to (stored before this statement, by AttachmentStore).
    const referenceRows = messages.flatMap(({ message }) =>
      [...new Set(message.content.attachments.filter(isStored).map((a) => a.hash))].map((hash) => placeholders([message.id, hash])),
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
              'envelope_from, inbound_message_id, content_bytes) ' +
              `VALUES ${messageRows.join(', ')}`,
          ]
        : []),
      ...(eventRows.length
        ? [`INSERT INTO message_events (message_id, type, recipient, detail, occurred_at) VALUES ${eventRows.join(', ')}`]
        : []),
      ...(referenceRows.length ? [`INSERT INTO message_attachments (message_id, hash) VALUES ${referenceRows.join(', ')}`] : []),
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
    await runner.query(sql, params);
    for (const { message } of messages) emails.inc({ status: message.status });
  }
}

function pending(acceptance: Acceptance): PendingAcceptance {
  const contentJson = acceptance.messages.map(({ message }) => JSON.stringify(message.content));
  const bytes = contentJson.reduce((sum, json) => sum + Buffer.byteLength(json), 0) + companionBytes(acceptance.statements ?? []);
  return { ...acceptance, contentJson, bytes };
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
