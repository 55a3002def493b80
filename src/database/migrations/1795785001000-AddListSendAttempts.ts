import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A list send whose fan-out keeps failing ends `failed` after its attempts: `attempts` counts the runs of its
 * fan-out over every job it had (a job the sweeper adds again goes on counting), `last_error` says why the last
 * one failed. A failed send is finished: the partial index of unfinished sends leaves it out.
 */
export class AddListSendAttempts1795785001000 implements MigrationInterface {
  name = 'AddListSendAttempts1795785001000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "list_sends" ADD "attempts" integer NOT NULL DEFAULT '0'`);
    await queryRunner.query(`ALTER TABLE "list_sends" ADD "last_error" text`);
    await queryRunner.query(`DROP INDEX "public"."IX_list_sends_unfinished"`);
    await queryRunner.query(
      `CREATE INDEX "IX_list_sends_unfinished" ON "list_sends" ("updated_at") WHERE "status" NOT IN ('done', 'stopped', 'failed')`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."IX_list_sends_unfinished"`);
    // The previous schema knows no failed send: it ended as a stopped one.
    await queryRunner.query(`UPDATE "list_sends" SET "status" = 'stopped', "stopped_reason" = 'failed' WHERE "status" = 'failed'`);
    await queryRunner.query(
      `CREATE INDEX "IX_list_sends_unfinished" ON "list_sends" ("updated_at") WHERE "status" NOT IN ('done', 'stopped')`,
    );
    await queryRunner.query(`ALTER TABLE "list_sends" DROP COLUMN "last_error"`);
    await queryRunner.query(`ALTER TABLE "list_sends" DROP COLUMN "attempts"`);
  }
}
