import { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateDomains1795322252837 implements MigrationInterface {
  name = 'CreateDomains1795322252837';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "domains" ("id" character varying(40) NOT NULL, "account_id" character varying(40) NOT NULL, "name" character varying(253) NOT NULL, "status" character varying(10) NOT NULL, "verification_token" character varying(64) NOT NULL, "dkim_selector" character varying(63) NOT NULL, "dkim_private_key" text NOT NULL, "dkim_public_key" text NOT NULL, "settings" jsonb NOT NULL DEFAULT '{}', "verified_at" TIMESTAMP WITH TIME ZONE, "last_checked_at" TIMESTAMP WITH TIME ZONE, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_05a6b087662191c2ea7f7ddfc4d" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE UNIQUE INDEX "UQ_domains_verified_name" ON "domains" ("name") WHERE "status" = 'verified'`);
    await queryRunner.query(`CREATE UNIQUE INDEX "UQ_domains_account_name" ON "domains" ("account_id", "name") `);
    await queryRunner.query(
      `ALTER TABLE "domains" ADD CONSTRAINT "FK_a525bf28362672f3677fe13241d" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "domains" DROP CONSTRAINT "FK_a525bf28362672f3677fe13241d"`);
    await queryRunner.query(`DROP INDEX "public"."UQ_domains_account_name"`);
    await queryRunner.query(`DROP INDEX "public"."UQ_domains_verified_name"`);
    await queryRunner.query(`DROP TABLE "domains"`);
  }
}
