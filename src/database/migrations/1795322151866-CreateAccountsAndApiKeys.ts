import { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateAccountsAndApiKeys1795322151866 implements MigrationInterface {
  name = 'CreateAccountsAndApiKeys1795322151866';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "accounts" ("id" character varying(40) NOT NULL, "name" character varying(200) NOT NULL, "tier" character varying(16) NOT NULL, "is_operator" boolean NOT NULL DEFAULT false, "settings" jsonb NOT NULL DEFAULT '{}'::jsonb, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_5a7a02c20412299d198e097a8fe" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE TABLE "api_keys" ("id" character varying(40) NOT NULL, "account_id" character varying(40) NOT NULL, "name" character varying(200) NOT NULL, "key_type" character varying(10) NOT NULL, "key_hash" character(64) NOT NULL, "key_preview" character varying(64) NOT NULL, "domain_scope" character varying(253), "permissions" text array NOT NULL, "rate_limit" integer NOT NULL, "restrictions" jsonb NOT NULL DEFAULT '{}'::jsonb, "expires_at" TIMESTAMP WITH TIME ZONE, "last_used_at" TIMESTAMP WITH TIME ZONE, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_5c8a79801b44bd27b79228e1dad" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "IDX_decaf331589778e33441b2a8d9" ON "api_keys" ("account_id") `);
    await queryRunner.query(`CREATE UNIQUE INDEX "IDX_57384430aa1959f4578046c9b8" ON "api_keys" ("key_hash") `);
    await queryRunner.query(
      `ALTER TABLE "api_keys" ADD CONSTRAINT "FK_decaf331589778e33441b2a8d9e" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "api_keys" DROP CONSTRAINT "FK_decaf331589778e33441b2a8d9e"`);
    await queryRunner.query(`DROP INDEX "public"."IDX_57384430aa1959f4578046c9b8"`);
    await queryRunner.query(`DROP INDEX "public"."IDX_decaf331589778e33441b2a8d9"`);
    await queryRunner.query(`DROP TABLE "api_keys"`);
    await queryRunner.query(`DROP TABLE "accounts"`);
  }
}
