import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The URLs of each message's click links, recorded when it is sent, so that a click is a lookup rather than a parse
 * of the stored HTML. Messages sent before this version get theirs at their first click (parsed once from their
 * HTML while it is kept).
 */
export class CreateMessageLinks1795745001000 implements MigrationInterface {
  name = 'CreateMessageLinks1795745001000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "message_links" ("message_id" character varying(40) NOT NULL, "urls" jsonb NOT NULL, CONSTRAINT "PK_message_links" PRIMARY KEY ("message_id"))`,
    );
    await queryRunner.query(
      `ALTER TABLE "message_links" ADD CONSTRAINT "FK_6be45845c378f5fd44734d5297c" FOREIGN KEY ("message_id") REFERENCES "messages"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "message_links" DROP CONSTRAINT "FK_6be45845c378f5fd44734d5297c"`);
    await queryRunner.query(`DROP TABLE "message_links"`);
  }
}
