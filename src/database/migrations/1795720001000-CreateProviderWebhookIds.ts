import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The provider's `webhook-id`s move from Redis to PostgreSQL, so that a Redis restart (empty or from an older
 * snapshot) never applies a provider's retry twice. The ids Redis holds now are not copied: a retry of a call
 * applied just before the upgrade is applied again, as after a Redis restart before this version.
 */
export class CreateProviderWebhookIds1795720001000 implements MigrationInterface {
  name = 'CreateProviderWebhookIds1795720001000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "provider_webhook_ids" ("id_hash" character(64) NOT NULL, "state" character varying(8) NOT NULL, "claim" uuid NOT NULL, "expires_at" TIMESTAMP WITH TIME ZONE NOT NULL, CONSTRAINT "CHK_provider_webhook_ids_state" CHECK ("state" IN ('pending', 'applied')), CONSTRAINT "PK_provider_webhook_ids" PRIMARY KEY ("id_hash"))`,
    );
    await queryRunner.query(`CREATE INDEX "IX_provider_webhook_ids_expires" ON "provider_webhook_ids" ("expires_at") `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."IX_provider_webhook_ids_expires"`);
    await queryRunner.query(`DROP TABLE "provider_webhook_ids"`);
  }
}
