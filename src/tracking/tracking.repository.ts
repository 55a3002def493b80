import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { MessageTracking } from '../outbox/message.entity';

/** What a tracking hit needs of its message. */
export interface TrackedMessageRecord {
  id: string;
  accountId: string;
  fromAddress: string;
  recipients: string[];
  sentAt: Date | null;
  listId: string | null;
  tracking: MessageTracking | null;
}

/** A click's link as message_links holds it: `recorded` false for a message sent before links were recorded. */
export interface RecordedLink {
  recorded: boolean;
  /** Null when the message has no such link (or its links were not recorded). */
  url: string | null;
}

interface MessageRow {
  id: string;
  account_id: string;
  from_address: string;
  recipients: string[];
  sent_at: Date | null;
  list_id: string | null;
  tracking: MessageTracking | null;
  links_recorded?: boolean;
  url?: string | null;
}

const MESSAGE_COLUMNS = 'm.id, m.account_id, m.from_address, m.recipients, m.sent_at, m.list_id, m.tracking';

/** The tracking routes' message lookup: one per hit (its events are written by LateEventsRepository.recordLateEvent). */
@Injectable()
export class TrackingRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  async findMessage(messageId: string): Promise<TrackedMessageRecord | null> {
    const rows: MessageRow[] = await this.dataSource.query(`SELECT ${MESSAGE_COLUMNS} FROM messages m WHERE m.id = $1`, [messageId]);
    return rows[0] ? recordOf(rows[0]) : null;
  }

  /** The message of a click and the URL of its link number `link`, in one query (message_links, never the HTML). */
  async findClick(messageId: string, link: number): Promise<(TrackedMessageRecord & { link: RecordedLink }) | null> {
    const rows: MessageRow[] = await this.dataSource.query(
      `SELECT ${MESSAGE_COLUMNS}, l.urls IS NOT NULL AS links_recorded, l.urls->>$2::int AS url ` +
        'FROM messages m LEFT JOIN message_links l ON l.message_id = m.id WHERE m.id = $1',
      [messageId, link],
    );
    const row = rows[0];
    if (!row) return null;
    return { ...recordOf(row), link: { recorded: row.links_recorded === true, url: row.url ?? null } };
  }

  /** The HTML part as the sender wrote it; null once the message's content was swept (or it had none). */
  async findHtml(messageId: string): Promise<string | null> {
    const rows: { html: string | null }[] = await this.dataSource.query("SELECT content->>'html' AS html FROM messages WHERE id = $1", [
      messageId,
    ]);
    return rows[0]?.html ?? null;
  }
}

function recordOf(row: MessageRow): TrackedMessageRecord {
  return {
    id: row.id,
    accountId: row.account_id,
    fromAddress: row.from_address,
    recipients: row.recipients,
    sentAt: row.sent_at,
    listId: row.list_id,
    tracking: row.tracking,
  };
}
