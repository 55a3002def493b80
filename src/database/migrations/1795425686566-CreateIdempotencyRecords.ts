import { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateIdempotencyRecords1795425686566 implements MigrationInterface {
  name = 'CreateIdempotencyRecords1795425686566';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "idempotency_records" ("scope" character varying(80) NOT NULL, "key_hash" character(64) NOT NULL, "request_hash" character(64) NOT NULL, "status_code" smallint NOT NULL, "body" jsonb NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "expires_at" TIMESTAMP WITH TIME ZONE NOT NULL, CONSTRAINT "PK_idempotency_records" PRIMARY KEY ("scope", "key_hash"))`,
    );
    await queryRunner.query(`CREATE INDEX "IX_idempotency_records_expires" ON "idempotency_records" ("expires_at") `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."IX_idempotency_records_expires"`);
    await queryRunner.query(`DROP TABLE "idempotency_records"`);
  }
}
