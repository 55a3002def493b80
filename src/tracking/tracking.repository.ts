import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
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

/** The tracking routes' message lookup: one per hit (its events are written by LateEventsRepository.recordLateEvent). */
@Injectable()
export class TrackingRepository {
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
}
