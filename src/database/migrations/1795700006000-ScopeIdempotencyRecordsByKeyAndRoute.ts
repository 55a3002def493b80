import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Idempotency-Key records belong to the API key that sent them and the route (D-36), no longer to the account.
 * The records kept so far (24 h at most) say neither which key nor which route: they stay, with the route '',
 * where only processes of the previous version find them (this version's scopes are `key:…`), until they are
 * purged as they expire. The default lets those processes keep inserting while a rolling upgrade lasts.
 */
export class ScopeIdempotencyRecordsByKeyAndRoute1795700006000 implements MigrationInterface {
  name = 'ScopeIdempotencyRecordsByKeyAndRoute1795700006000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "idempotency_records" DROP CONSTRAINT "PK_idempotency_records"`);
    await queryRunner.query(`ALTER TABLE "idempotency_records" ADD "route" text NOT NULL DEFAULT ''`);
    await queryRunner.query(
      `ALTER TABLE "idempotency_records" ADD CONSTRAINT "PK_idempotency_records" PRIMARY KEY ("scope", "route", "key_hash")`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    // One key on two routes is two records: only those of the previous version fit its primary key.
    await queryRunner.query(`DELETE FROM "idempotency_records" WHERE "route" <> ''`);
    await queryRunner.query(`ALTER TABLE "idempotency_records" DROP CONSTRAINT "PK_idempotency_records"`);
    await queryRunner.query(`ALTER TABLE "idempotency_records" DROP COLUMN "route"`);
    await queryRunner.query(`ALTER TABLE "idempotency_records" ADD CONSTRAINT "PK_idempotency_records" PRIMARY KEY ("scope", "key_hash")`);
  }
}
