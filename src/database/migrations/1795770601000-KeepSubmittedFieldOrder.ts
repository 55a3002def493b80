import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A submission's fields as `json`, which keeps the posted order of its keys (`jsonb` sorts them): listings and the
 * CSV export show fields in the order the form posted them. Nothing queries the fields with jsonb operators. Rows
 * stored before keep jsonb's order, the one they have.
 */
export class KeepSubmittedFieldOrder1795770601000 implements MigrationInterface {
  name = 'KeepSubmittedFieldOrder1795770601000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "form_submissions" ALTER COLUMN "fields" TYPE json USING "fields"::json`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "form_submissions" ALTER COLUMN "fields" TYPE jsonb USING "fields"::jsonb`);
  }
}
