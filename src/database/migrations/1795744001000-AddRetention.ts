import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Retention: a message's body can be cleared (content_swept_at says when), a received message's raw bytes too
 * (source made nullable, source_swept_at), and partial indexes let each retention batch find its oldest rows
 * without scanning the table: final messages with a body, forwarded messages by their received message,
 * received messages still holding their bytes, published outbox events, finished webhook deliveries.
 */
export class AddRetention1795744001000 implements MigrationInterface {
  name = 'AddRetention1795744001000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "messages" ADD "content_swept_at" TIMESTAMP WITH TIME ZONE`);
    await queryRunner.query(`ALTER TABLE "inbound_messages" ADD "source_swept_at" TIMESTAMP WITH TIME ZONE`);
    await queryRunner.query(`ALTER TABLE "inbound_messages" ALTER COLUMN "source" DROP NOT NULL`);
    await queryRunner.query(
      `CREATE INDEX "IX_messages_content_retention" ON "messages" ("updated_at") WHERE "content_swept_at" IS NULL AND "status" IN ('sent', 'delivered', 'bounced', 'failed', 'cancelled')`,
    );
    await queryRunner.query(
      `CREATE INDEX "IX_messages_inbound_message" ON "messages" ("inbound_message_id") WHERE "inbound_message_id" IS NOT NULL`,
    );
    await queryRunner.query(
      `CREATE INDEX "IX_inbound_messages_unswept" ON "inbound_messages" ("created_at") WHERE "source_swept_at" IS NULL`,
    );
    await queryRunner.query(`CREATE INDEX "IX_event_outbox_published" ON "event_outbox" ("published_at") WHERE "published_at" IS NOT NULL`);
    await queryRunner.query(
      `CREATE INDEX "IX_webhook_deliveries_finished" ON "webhook_deliveries" ("updated_at") WHERE "status" <> 'pending'`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."IX_webhook_deliveries_finished"`);
    await queryRunner.query(`DROP INDEX "public"."IX_event_outbox_published"`);
    await queryRunner.query(`DROP INDEX "public"."IX_inbound_messages_unswept"`);
    await queryRunner.query(`DROP INDEX "public"."IX_messages_inbound_message"`);
    await queryRunner.query(`DROP INDEX "public"."IX_messages_content_retention"`);
    // Raw bytes already swept cannot come back: those received messages keep an empty body.
    await queryRunner.query(`UPDATE "inbound_messages" SET "source" = ''::bytea WHERE "source" IS NULL`);
    await queryRunner.query(`ALTER TABLE "inbound_messages" ALTER COLUMN "source" SET NOT NULL`);
    await queryRunner.query(`ALTER TABLE "inbound_messages" DROP COLUMN "source_swept_at"`);
    await queryRunner.query(`ALTER TABLE "messages" DROP COLUMN "content_swept_at"`);
  }
}
