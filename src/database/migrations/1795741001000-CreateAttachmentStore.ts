import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Attachments stored apart from their messages, once per SHA-256: the blob, its chunks of about 1 MB, and each
 * message's references (what the sweep of unreferenced blobs goes by). `messages.content_bytes` keeps what a delivery
 * of the message loads. Messages accepted before keep their base64 attachments in `content`, and are sent from it.
 */
export class CreateAttachmentStore1795741001000 implements MigrationInterface {
  name = 'CreateAttachmentStore1795741001000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "attachment_blobs" ("hash" character varying(64) NOT NULL, "size" integer NOT NULL, ` +
        `"created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "referenced_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), ` +
        `CONSTRAINT "PK_attachment_blobs" PRIMARY KEY ("hash"))`,
    );
    await queryRunner.query(`CREATE INDEX "IX_attachment_blobs_referenced_at" ON "attachment_blobs" ("referenced_at")`);
    await queryRunner.query(
      `CREATE TABLE "attachment_chunks" ("hash" character varying(64) NOT NULL, "seq" integer NOT NULL, "data" bytea NOT NULL, ` +
        `CONSTRAINT "PK_attachment_chunks" PRIMARY KEY ("hash", "seq"))`,
    );
    await queryRunner.query(
      `ALTER TABLE "attachment_chunks" ADD CONSTRAINT "FK_attachment_chunks_blob" FOREIGN KEY ("hash") REFERENCES "attachment_blobs"("hash") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `CREATE TABLE "message_attachments" ("message_id" character varying(40) NOT NULL, "hash" character varying(64) NOT NULL, ` +
        `CONSTRAINT "PK_message_attachments" PRIMARY KEY ("message_id", "hash"))`,
    );
    await queryRunner.query(`CREATE INDEX "IX_message_attachments_hash" ON "message_attachments" ("hash")`);
    await queryRunner.query(
      `ALTER TABLE "message_attachments" ADD CONSTRAINT "FK_message_attachments_message" FOREIGN KEY ("message_id") REFERENCES "messages"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "message_attachments" ADD CONSTRAINT "FK_message_attachments_blob" FOREIGN KEY ("hash") REFERENCES "attachment_blobs"("hash") ON DELETE NO ACTION ON UPDATE NO ACTION`,
    );
    await queryRunner.query(`ALTER TABLE "messages" ADD "content_bytes" integer`);
  }

  /** The bytes of attachments stored since go: messages referring to them can no longer be sent. */
  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "messages" DROP COLUMN "content_bytes"`);
    await queryRunner.query(`ALTER TABLE "message_attachments" DROP CONSTRAINT "FK_message_attachments_blob"`);
    await queryRunner.query(`ALTER TABLE "message_attachments" DROP CONSTRAINT "FK_message_attachments_message"`);
    await queryRunner.query(`DROP INDEX "public"."IX_message_attachments_hash"`);
    await queryRunner.query(`DROP TABLE "message_attachments"`);
    await queryRunner.query(`ALTER TABLE "attachment_chunks" DROP CONSTRAINT "FK_attachment_chunks_blob"`);
    await queryRunner.query(`DROP TABLE "attachment_chunks"`);
    await queryRunner.query(`DROP INDEX "public"."IX_attachment_blobs_referenced_at"`);
    await queryRunner.query(`DROP TABLE "attachment_blobs"`);
  }
}
