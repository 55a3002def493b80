import { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateMessages1795324110561 implements MigrationInterface {
  name = 'CreateMessages1795324110561';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "messages" ("id" character varying(40) NOT NULL, "account_id" character varying(40) NOT NULL, "status" character varying(12) NOT NULL, "from_address" character varying(320) NOT NULL, "from_domain" character varying(253) NOT NULL, "subject" text NOT NULL, "recipients" jsonb NOT NULL, "pending_recipients" jsonb NOT NULL, "suppressed_recipients" jsonb NOT NULL, "header_message_id" character varying(300) NOT NULL, "content" jsonb NOT NULL, "priority" character varying(6) NOT NULL, "scheduled_for" TIMESTAMP WITH TIME ZONE, "tracking" jsonb, "list_id" character varying(100), "template_name" character varying(200), "attempts" integer NOT NULL DEFAULT '0', "last_error" text, "sent_at" TIMESTAMP WITH TIME ZONE, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_18325f38ae6de43878487eff986" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "IX_messages_awaiting_delivery" ON "messages" ("updated_at") WHERE "status" IN ('queued', 'scheduled', 'deferred')`,
    );
    await queryRunner.query(`CREATE INDEX "IX_messages_account_created" ON "messages" ("account_id", "created_at") `);
    await queryRunner.query(
      `CREATE TABLE "message_events" ("id" BIGSERIAL NOT NULL, "message_id" character varying(40) NOT NULL, "type" character varying(20) NOT NULL, "recipient" character varying(320), "detail" text, "occurred_at" TIMESTAMP WITH TIME ZONE NOT NULL, CONSTRAINT "PK_1ee7d4682c056e24ee0b00d1e3b" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "IX_message_events_message" ON "message_events" ("message_id", "occurred_at") `);
    await queryRunner.query(
      `ALTER TABLE "messages" ADD CONSTRAINT "FK_d61d1bec4a104d044b6e5abd843" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "message_events" ADD CONSTRAINT "FK_f898c800595db4f3ce702e466bc" FOREIGN KEY ("message_id") REFERENCES "messages"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "message_events" DROP CONSTRAINT "FK_f898c800595db4f3ce702e466bc"`);
    await queryRunner.query(`ALTER TABLE "messages" DROP CONSTRAINT "FK_d61d1bec4a104d044b6e5abd843"`);
    await queryRunner.query(`DROP INDEX "public"."IX_message_events_message"`);
    await queryRunner.query(`DROP TABLE "message_events"`);
    await queryRunner.query(`DROP INDEX "public"."IX_messages_account_created"`);
    await queryRunner.query(`DROP INDEX "public"."IX_messages_awaiting_delivery"`);
    await queryRunner.query(`DROP TABLE "messages"`);
  }
}
