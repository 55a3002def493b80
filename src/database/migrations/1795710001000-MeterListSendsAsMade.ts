import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A list send counts the emails it makes: `metered` holds what is counted against the quotas for it, a send
 * can end `stopped` (a quota ran out) with `refused` and `stopped_reason`, and it outlives its list, so that a
 * list deleted meanwhile ends it and gives back what it did not make. A send accepted before this counted its
 * subscribers at acceptance and was not told the number: an unfinished one is given the subscribers it
 * made plus those it would still reach, a finished one what it made.
 */
export class MeterListSendsAsMade1795710001000 implements MigrationInterface {
  name = 'MeterListSendsAsMade1795710001000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "list_sends" DROP CONSTRAINT "FK_d25ddc4180c24e8045a46c3d149"`);
    await queryRunner.query(`ALTER TABLE "list_sends" ADD "metered" integer NOT NULL DEFAULT '0'`);
    await queryRunner.query(`ALTER TABLE "list_sends" ADD "refused" integer NOT NULL DEFAULT '0'`);
    await queryRunner.query(`ALTER TABLE "list_sends" ADD "stopped_reason" character varying(32)`);
    await queryRunner.query(
      `UPDATE "list_sends" l SET "metered" = l."queued" + CASE WHEN l."status" = 'done' THEN 0 ELSE (
         SELECT count(*)::int FROM "list_subscribers" s
         WHERE s."list_id" = l."list_id" AND s."status" = 'subscribed' AND s."email" > COALESCE(l."cursor", '')
           AND NOT EXISTS (SELECT 1 FROM "suppression_entries" x WHERE x."account_id" = l."account_id" AND x."email" = s."email")
       ) END`,
    );
    await queryRunner.query(`ALTER TABLE "list_sends" ADD CONSTRAINT "CHK_list_sends_metered_covers_queued" CHECK ("metered" >= "queued")`);
    await queryRunner.query(`DROP INDEX "public"."IX_list_sends_unfinished"`);
    await queryRunner.query(
      `CREATE INDEX "IX_list_sends_unfinished" ON "list_sends" ("updated_at") WHERE "status" NOT IN ('done', 'stopped')`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."IX_list_sends_unfinished"`);
    await queryRunner.query(`UPDATE "list_sends" SET "status" = 'done' WHERE "status" = 'stopped'`);
    await queryRunner.query(`CREATE INDEX "IX_list_sends_unfinished" ON "list_sends" ("updated_at") WHERE "status" <> 'done'`);
    await queryRunner.query(`ALTER TABLE "list_sends" DROP CONSTRAINT "CHK_list_sends_metered_covers_queued"`);
    await queryRunner.query(`ALTER TABLE "list_sends" DROP COLUMN "stopped_reason"`);
    await queryRunner.query(`ALTER TABLE "list_sends" DROP COLUMN "refused"`);
    await queryRunner.query(`ALTER TABLE "list_sends" DROP COLUMN "metered"`);
    // The previous schema has no list send without its list.
    await queryRunner.query(`DELETE FROM "list_sends" l WHERE NOT EXISTS (SELECT 1 FROM "mailing_lists" m WHERE m."id" = l."list_id")`);
    await queryRunner.query(
      `ALTER TABLE "list_sends" ADD CONSTRAINT "FK_d25ddc4180c24e8045a46c3d149" FOREIGN KEY ("list_id") REFERENCES "mailing_lists"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }
}
