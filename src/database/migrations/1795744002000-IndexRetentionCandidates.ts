import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Partial indexes that let each retention batch find its oldest rows without scanning the table: final messages
 * with a body, forwarded messages by their received message, received messages still holding their bytes,
 * published outbox events, finished webhook deliveries. Built CONCURRENTLY, outside a transaction, so that the
 * instances still running take acceptances and delivery results while they are built on large tables.
 */
export class IndexRetentionCandidates1795744002000 implements MigrationInterface {
  name = 'IndexRetentionCandidates1795744002000';
  transaction = false as const;

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE INDEX CONCURRENTLY IF NOT EXISTS "IX_messages_content_retention" ON "messages" ("updated_at") WHERE "content_swept_at" IS NULL AND "status" IN ('sent', 'delivered', 'bounced', 'failed', 'cancelled')`,
    );
    await queryRunner.query(
      `CREATE INDEX CONCURRENTLY IF NOT EXISTS "IX_messages_inbound_message" ON "messages" ("inbound_message_id") WHERE "inbound_message_id" IS NOT NULL`,
    );
    await queryRunner.query(
      `CREATE INDEX CONCURRENTLY IF NOT EXISTS "IX_inbound_messages_unswept" ON "inbound_messages" ("created_at") WHERE "source_swept_at" IS NULL`,
    );
    await queryRunner.query(
      `CREATE INDEX CONCURRENTLY IF NOT EXISTS "IX_event_outbox_published" ON "event_outbox" ("published_at") WHERE "published_at" IS NOT NULL`,
    );
    await queryRunner.query(
      `CREATE INDEX CONCURRENTLY IF NOT EXISTS "IX_webhook_deliveries_finished" ON "webhook_deliveries" ("updated_at") WHERE "status" <> 'pending'`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    for (const index of [
      'IX_webhook_deliveries_finished',
      'IX_event_outbox_published',
      'IX_inbound_messages_unswept',
      'IX_messages_inbound_message',
      'IX_messages_content_retention',
    ]) {
      await queryRunner.query(`DROP INDEX CONCURRENTLY IF EXISTS "public"."${index}"`);
    }
  }
}
