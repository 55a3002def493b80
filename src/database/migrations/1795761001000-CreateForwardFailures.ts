import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The destinations of forwarded messages that will not get them, written with the move that says so: each one's
 * sender is owed a delivery status notification, made from here once (the key) and marked reported in its commit.
 */
export class CreateForwardFailures1795761001000 implements MigrationInterface {
  name = 'CreateForwardFailures1795761001000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "forward_failures" ("message_id" character varying(40) NOT NULL, "recipient" character varying(320) NOT NULL, "status" character varying(12) NOT NULL, "diagnostic" text NOT NULL, "failed_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "reported_at" TIMESTAMP WITH TIME ZONE, "report_attempts" integer NOT NULL DEFAULT 0, "dsn_message_id" character varying(40), CONSTRAINT "PK_forward_failures" PRIMARY KEY ("message_id", "recipient"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "IX_forward_failures_unreported" ON "forward_failures" ("failed_at") WHERE "reported_at" IS NULL`,
    );
    await queryRunner.query(
      `ALTER TABLE "forward_failures" ADD CONSTRAINT "FK_aebf134009758fb19292956e94f" FOREIGN KEY ("message_id") REFERENCES "messages"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "forward_failures" DROP CONSTRAINT "FK_aebf134009758fb19292956e94f"`);
    await queryRunner.query(`DROP INDEX "public"."IX_forward_failures_unreported"`);
    await queryRunner.query(`DROP TABLE "forward_failures"`);
  }
}
