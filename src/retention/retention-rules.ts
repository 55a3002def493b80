import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AttachmentStore } from '../outbox/attachments/attachment-store';
import { MessageLinksRepository } from '../tracking/message-links.repository';
import { TrackedContentService } from '../tracking/tracked-content.service';
import { AWAITING_DELIVERY, FINAL_STATUSES, MessageStatus } from '../outbox/message.entity';
import type { RetentionKind } from './retention-policy';

/** What a sweep counts, each under its own `kind` of mailroom_retention_swept_total. */
export type SweptKind = RetentionKind | 'webhook_event_bodies' | 'attachment_blobs';

/** One kind of row retention removes or clears. */
export interface RetentionRule {
  /** The setting whose days it follows. */
  kind: RetentionKind;
  /** What it counts as in /metrics and in the sweep's answer. */
  counted: SweptKind;
  /** Removes or clears at most `size` rows past `cutoff` in one short transaction (SKIP LOCKED); answers how many. */
  sweep(cutoff: Date, size: number): Promise<number>;
}

/** Bytes of bodies one batch reads at most (the first message always goes, however large): clearing a body reads it. */
const CONTENT_BYTES_PER_BATCH = 64 * 1024 * 1024;

const sqlList = (statuses: readonly MessageStatus[]) => statuses.map((s) => `'${s}'`).join(', ');

/**
 * A final message's body: text, html, custom headers, attachments and a notification's report go, the envelope
 * (from, to, cc, replyTo, subject, date) stays, and the content keeps its shape (headers {}, attachments []) for every
 * reader of it.
 * The candidates' predicate is the one of the partial index IX_messages_content_retention. Its size is forgotten
 * with it (a reader that needs it measures the content left, as for messages accepted before it was kept). The HTML
 * of a message tracking clicks whose links were never recorded (sent before they were recorded at sending) is
 * returned, for its links to be recorded before the commit.
 */
const CLEAR_MESSAGE_CONTENT = `
  WITH candidates AS (
    SELECT id, updated_at, pg_column_size(content) AS bytes FROM messages
     WHERE content_swept_at IS NULL AND status IN (${sqlList(FINAL_STATUSES)}) AND updated_at < $1
     ORDER BY updated_at LIMIT $2 FOR UPDATE SKIP LOCKED
  ), batch AS (
    SELECT id FROM (SELECT id, sum(bytes) OVER (ORDER BY updated_at, id) - bytes AS before FROM candidates) c WHERE before < $3
  ), unrecorded AS (
    SELECT m.id, m.content->>'html' AS html FROM messages m JOIN batch ON batch.id = m.id
     WHERE (m.tracking->>'clicks')::boolean AND m.content->>'html' IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM message_links l WHERE l.message_id = m.id)
  ), cleared AS (
    UPDATE messages m
       SET content = (m.content - '{text,html,headers,attachments,report}'::text[]) || '{"headers":{},"attachments":[]}'::jsonb,
           content_swept_at = now(), content_bytes = NULL
      FROM batch WHERE m.id = batch.id
    RETURNING m.id
  )
  SELECT cleared.id, unrecorded.html FROM cleared LEFT JOIN unrecorded ON unrecorded.id = cleared.id`;

/** A received message's raw bytes, once every message forwarding it is final and has been for the retention. */
const CLEAR_INBOUND_SOURCE = `
  UPDATE inbound_messages SET source = NULL, source_swept_at = now()
   WHERE id IN (
     SELECT i.id FROM inbound_messages i
      WHERE i.source_swept_at IS NULL AND i.created_at < $1
        AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.inbound_message_id = i.id
                         AND (m.status IN (${sqlList(AWAITING_DELIVERY)}) OR m.updated_at >= $1))
      ORDER BY i.created_at LIMIT $2 FOR UPDATE OF i SKIP LOCKED)`;

/** Published outbox events: their deliveries hold their own copy of the payload. */
const DELETE_PUBLISHED_EVENTS = `
  DELETE FROM event_outbox WHERE id IN (
    SELECT id FROM event_outbox WHERE published_at < $1 ORDER BY published_at LIMIT $2 FOR UPDATE SKIP LOCKED)`;

/** Finished webhook deliveries; their attempts go with them (ON DELETE CASCADE). */
const DELETE_FINISHED_DELIVERIES = `
  DELETE FROM webhook_deliveries WHERE id IN (
    SELECT id FROM webhook_deliveries WHERE status <> 'pending' AND updated_at < $1 ORDER BY updated_at LIMIT $2 FOR UPDATE SKIP LOCKED)`;

/** Full bodies of events delivered thin, once every delivery of theirs has gone. */
const DELETE_ORPHANED_EVENT_BODIES = `
  DELETE FROM webhook_event_bodies WHERE id IN (
    SELECT b.id FROM webhook_event_bodies b
     WHERE b.created_at < $1 AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = b.id)
     ORDER BY b.created_at LIMIT $2 FOR UPDATE OF b SKIP LOCKED)`;

/**
 * Clears the bodies of final messages and, in the same commit, their references to stored attachments (the
 * blobs no message refers to any more go at the sweep's end: AttachmentStore.deleteUnreferenced); the click links
 * of a message sent before links were recorded are recorded from its HTML first, so that its clicks keep working.
 */
@Injectable()
export class MessageContentRule implements RetentionRule {
  readonly kind = 'message_content';
  readonly counted = 'message_content';

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly attachments: AttachmentStore,
    private readonly trackedContent: TrackedContentService,
    private readonly links: MessageLinksRepository,
  ) {}

  sweep(cutoff: Date, size: number): Promise<number> {
    return this.dataSource.transaction(async (manager) => {
      const cleared: { id: string; html: string | null }[] = await manager.query(CLEAR_MESSAGE_CONTENT, [
        cutoff,
        size,
        CONTENT_BYTES_PER_BATCH,
      ]);
      const unrecorded = cleared.flatMap(({ id, html }) =>
        html === null ? [] : [{ messageId: id, urls: this.trackedContent.linksOf(id, html) }],
      );
      await this.links.recordIn(manager, unrecorded);
      const ids = cleared.map((row) => row.id);
      await this.attachments.release(manager, ids);
      return ids.length;
    });
  }
}

/** Every retention rule, in the order a sweep runs them. */
@Injectable()
export class RetentionRules {
  readonly all: readonly RetentionRule[];

  constructor(@InjectDataSource() dataSource: DataSource, messageContent: MessageContentRule) {
    const statement = (kind: RetentionKind, sql: string, counted: SweptKind = kind): RetentionRule => ({
      kind,
      counted,
      sweep: async (cutoff, size) => {
        const [, affected]: [unknown, number] = await dataSource.query(sql, [cutoff, size]);
        return affected;
      },
    });
    this.all = [
      messageContent,
      statement('inbound_messages', CLEAR_INBOUND_SOURCE),
      statement('outbox_events', DELETE_PUBLISHED_EVENTS),
      statement('webhook_deliveries', DELETE_FINISHED_DELIVERIES),
      // After the deliveries: the bodies they leave without one go in the same run.
      statement('webhook_deliveries', DELETE_ORPHANED_EVENT_BODIES, 'webhook_event_bodies'),
    ];
  }

  /** The rules that follow this setting, in the order they run. */
  of(kind: RetentionKind): RetentionRule[] {
    return this.all.filter((rule) => rule.kind === kind);
  }
}
