import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The held submissions of each form (instant forms not confirmed yet), oldest first: the release claims them a page at
 * a time, and workers look every minute for held ones of confirmed forms without scanning every submission. Built
 * CONCURRENTLY, outside a transaction, so that instances still running take form posts while it is built. A build
 * that failed (or was cancelled) leaves the index INVALID, which IF NOT EXISTS would keep: such a one is dropped first.
 */
export class IndexHeldSubmissions1795786001000 implements MigrationInterface {
  name = 'IndexHeldSubmissions1795786001000';
  transaction = false as const;

  public async up(queryRunner: QueryRunner): Promise<void> {
    const invalid = (await queryRunner.query(
      `SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
        WHERE c.relname = 'IX_form_submissions_held' AND c.relnamespace = 'public'::regnamespace AND NOT i.indisvalid`,
    )) as unknown[];
    if (invalid.length) await queryRunner.query(`DROP INDEX CONCURRENTLY IF EXISTS "public"."IX_form_submissions_held"`);
    await queryRunner.query(
      `CREATE INDEX CONCURRENTLY IF NOT EXISTS "IX_form_submissions_held" ON "form_submissions" ("form_id", "created_at", "id") WHERE "status" = 'held'`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX CONCURRENTLY IF EXISTS "public"."IX_form_submissions_held"`);
  }
}
