import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Webhooks are disabled on 410 Gone and after a span of only failures: why and when (a webhook disabled before
 * this version was disabled through the API), the first failure since the last success, and whether the account's
 * contact is still to be emailed. Events too large for a webhook keep their full body once, in webhook_event_bodies.
 */
export class AddWebhookLifecycle1795765001000 implements MigrationInterface {
  name = 'AddWebhookLifecycle1795765001000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "webhook_event_bodies" ("id" character varying(40) NOT NULL, "account_id" character varying(40) NOT NULL, "event_type" character varying(40) NOT NULL, "payload" jsonb NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_2485197edac06225e85f1add065" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "IX_webhook_event_bodies_created" ON "webhook_event_bodies" ("created_at") `);
    await queryRunner.query(`ALTER TABLE "webhooks" ADD "disabled_reason" character varying(20)`);
    await queryRunner.query(`ALTER TABLE "webhooks" ADD "disabled_at" TIMESTAMP WITH TIME ZONE`);
    await queryRunner.query(`ALTER TABLE "webhooks" ADD "failing_since" TIMESTAMP WITH TIME ZONE`);
    await queryRunner.query(`ALTER TABLE "webhooks" ADD "disabled_notice_pending" boolean NOT NULL DEFAULT false`);
    await queryRunner.query(`UPDATE "webhooks" SET "disabled_reason" = 'manual', "disabled_at" = "updated_at" WHERE NOT "enabled"`);
    await queryRunner.query(`CREATE INDEX "IX_webhooks_disabled_notice" ON "webhooks" ("disabled_at") WHERE "disabled_notice_pending"`);
    await queryRunner.query(
      `ALTER TABLE "webhook_event_bodies" ADD CONSTRAINT "FK_953665497d1764ac9f57bc2f62d" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "webhook_event_bodies" DROP CONSTRAINT "FK_953665497d1764ac9f57bc2f62d"`);
    await queryRunner.query(`DROP INDEX "public"."IX_webhooks_disabled_notice"`);
    await queryRunner.query(`ALTER TABLE "webhooks" DROP COLUMN "disabled_notice_pending"`);
    await queryRunner.query(`ALTER TABLE "webhooks" DROP COLUMN "failing_since"`);
    await queryRunner.query(`ALTER TABLE "webhooks" DROP COLUMN "disabled_at"`);
    await queryRunner.query(`ALTER TABLE "webhooks" DROP COLUMN "disabled_reason"`);
    await queryRunner.query(`DROP INDEX "public"."IX_webhook_event_bodies_created"`);
    await queryRunner.query(`DROP TABLE "webhook_event_bodies"`);
  }
}
