import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { allFulfilled, MicroBatch, settle } from '../common/micro-batch';
import type { MessageTracking } from '../email/message.entity';

/** What a tracking hit needs of its message. */
export interface TrackedMessageRecord {
  id: string;
  accountId: string;
  fromAddress: string;
  recipients: string[];
  sentAt: Date | null;
  listId: string | null;
  tracking: MessageTracking | null;
  /** The HTML part as the sender wrote it; loaded for clicks only. */
  html?: string | null;
}

export interface TrackingEvent {
  messageId: string;
  type: 'opened' | 'clicked' | 'unsubscribed';
  recipient: string | null;
  detail: string | null;
  machine: boolean;
  occurredAt: Date;
}

interface MessageRow {
  id: string;
  account_id: string;
  from_address: string;
  recipients: string[];
  sent_at: Date | null;
  list_id: string | null;
  tracking: MessageTracking | null;
  html?: string | null;
}

const MAX_EVENT_BATCH = 200;
const MAX_CONCURRENT_EVENT_BATCHES = 2;

/** The tracking routes' queries: one message lookup per hit, and the events of concurrent hits in one INSERT. */
@Injectable()
export class TrackingRepository {
  private readonly events = new MicroBatch<TrackingEvent, void>((events) => this.insertEvents(events), MAX_EVENT_BATCH, MAX_CONCURRENT_EVENT_BATCHES);

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  async findMessage(messageId: string, options: { html: boolean }): Promise<TrackedMessageRecord | null> {
    const rows: MessageRow[] = await this.dataSource.query(
      `SELECT id, account_id, from_address, recipients, sent_at, list_id, tracking${options.html ? ", content->>'html' AS html" : ''} ` +
        'FROM messages WHERE id = $1',
      [messageId],
    );
    const row = rows[0];
    if (!row) return null;
    return {
      id: row.id,
      accountId: row.account_id,
      fromAddress: row.from_address,
      recipients: row.recipients,
      sentAt: row.sent_at,
      listId: row.list_id,
      tracking: row.tracking,
      ...(options.html ? { html: row.html ?? null } : {}),
    };
  }

  /**
   * Writes the event. A message's unsubscribe of one address is written once (a unique index): a repeat, or
   * the event of a message deleted meanwhile, is dropped without an error.
   */
  record(event: TrackingEvent): Promise<void> {
    return this.events.submit(event);
  }

  private async insertEvents(events: TrackingEvent[]): Promise<PromiseSettledResult<void>[]> {
    if (events.length > 1) {
      try {
        await this.insert(events);
        return allFulfilled(events.map(() => undefined));
      } catch {
        // fall through: one by one, so that a bad row fails its own hit only
      }
    }
    return Promise.all(events.map((event) => settle(this.insert([event]))));
  }

  private async insert(events: TrackingEvent[]): Promise<void> {
    const rows = events.map((e, n) => ({
      n,
      message_id: e.messageId,
      type: e.type,
      recipient: e.recipient,
      detail: e.detail,
      machine: e.machine,
      occurred_at: e.occurredAt,
    }));
    await this.dataSource.query(
      `INSERT INTO message_events (message_id, type, recipient, detail, machine, occurred_at)
       SELECT e.message_id, e.type, e.recipient, e.detail, e.machine, e.occurred_at
       FROM jsonb_to_recordset($1::jsonb) AS e(n int, message_id varchar, type varchar, recipient varchar, detail text, machine boolean, occurred_at timestamptz)
       JOIN messages m ON m.id = e.message_id
       ORDER BY e.n
       ON CONFLICT DO NOTHING`,
      [JSON.stringify(rows)],
    );
  }
}
