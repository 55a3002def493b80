import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * api_keys.rate_limit becomes nullable (null: no hourly limit of the key's own, the account's plan bounds
 * it), the keys no other key made lose the default 1000 they were given, and adopted BOOTSTRAP_ADMIN_KEY
 * secrets are remembered so that a deleted bootstrap key is not adopted again.
 */
export class AddKeysWithoutHourlyLimit1795700003000 implements MigrationInterface {
  name = 'AddKeysWithoutHourlyLimit1795700003000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "adopted_bootstrap_keys" ("key_hash" character(64) NOT NULL, "account_id" character varying(40) NOT NULL, "adopted_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_12ae34b070bdac634d7172b2f8c" PRIMARY KEY ("key_hash"))`,
    );
    await queryRunner.query(`ALTER TABLE "api_keys" ALTER COLUMN "rate_limit" DROP NOT NULL`);
    await queryRunner.query(
      `ALTER TABLE "adopted_bootstrap_keys" ADD CONSTRAINT "FK_9b17587f16c9ac673f9dc6f7b25" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );

    // A tenant's first admin key: made with its account, named so by the service (keys could not be renamed
    // before this migration), unrestricted, still on the default, and the oldest admin key its account has.
    await queryRunner.query(
      `UPDATE "api_keys" k SET "rate_limit" = NULL
         FROM "accounts" a
        WHERE a."id" = k."account_id" AND NOT a."is_operator"
          AND k."key_type" = 'admin' AND k."name" = 'First admin key' AND k."rate_limit" = 1000
          AND k."restrictions" = '{}'::jsonb
          AND k."created_at" <= a."created_at" + interval '1 hour'
          AND NOT EXISTS (
            SELECT 1 FROM "api_keys" older
             WHERE older."account_id" = k."account_id" AND older."key_type" = 'admin'
               AND (older."created_at", older."id") < (k."created_at", k."id"))`,
    );
    // The operator's own keys: BOOTSTRAP_ADMIN_KEY adopted at start, or made by `cli bootstrap`.
    await queryRunner.query(
      `UPDATE "api_keys" k SET "rate_limit" = NULL
         FROM "accounts" a
        WHERE a."id" = k."account_id" AND a."is_operator"
          AND k."key_type" = 'admin' AND k."name" IN ('Bootstrap admin key', 'Operator admin key') AND k."rate_limit" = 1000`,
    );
    // A bootstrap key adopted before: its secret is not adopted again once the key is deleted.
    await queryRunner.query(
      `INSERT INTO "adopted_bootstrap_keys" ("key_hash", "account_id")
       SELECT k."key_hash", k."account_id"
         FROM "api_keys" k JOIN "accounts" a ON a."id" = k."account_id"
        WHERE a."is_operator" AND k."key_type" = 'admin' AND k."name" = 'Bootstrap admin key'`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "adopted_bootstrap_keys" DROP CONSTRAINT "FK_9b17587f16c9ac673f9dc6f7b25"`);
    await queryRunner.query(`UPDATE "api_keys" SET "rate_limit" = 1000 WHERE "rate_limit" IS NULL`);
    await queryRunner.query(`ALTER TABLE "api_keys" ALTER COLUMN "rate_limit" SET NOT NULL`);
    await queryRunner.query(`DROP TABLE "adopted_bootstrap_keys"`);
  }
}
