import { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateListsAndListSends1795440598588 implements MigrationInterface {
  name = 'CreateListsAndListSends1795440598588';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "mailing_lists" ("id" character varying(40) NOT NULL, "account_id" character varying(40) NOT NULL, "name" character varying(200) NOT NULL, "description" character varying(1000), "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_f96e6c8f1136a853af94a1fa4de" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "IX_mailing_lists_account_created" ON "mailing_lists" ("account_id", "created_at", "id") `);
    await queryRunner.query(`CREATE UNIQUE INDEX "UQ_mailing_lists_account_name" ON "mailing_lists" ("account_id", "name") `);
    await queryRunner.query(
      `CREATE TABLE "list_subscribers" ("list_id" character varying(40) NOT NULL, "email" character varying(320) NOT NULL, "name" character varying(200), "status" character varying(12) NOT NULL DEFAULT 'subscribed', "unsubscribed_at" TIMESTAMP WITH TIME ZONE, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_list_subscribers" PRIMARY KEY ("list_id", "email"))`,
    );
    await queryRunner.query(`CREATE INDEX "IX_list_subscribers_list_status_email" ON "list_subscribers" ("list_id", "status", "email") `);
    await queryRunner.query(
      `CREATE TABLE "list_sends" ("id" character varying(40) NOT NULL, "account_id" character varying(40) NOT NULL, "list_id" character varying(40) NOT NULL, "request" jsonb NOT NULL, "status" character varying(8) NOT NULL DEFAULT 'queued', "cursor" character varying(320), "queued" integer NOT NULL DEFAULT '0', "suppressed" integer NOT NULL DEFAULT '0', "failed" integer NOT NULL DEFAULT '0', "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "completed_at" TIMESTAMP WITH TIME ZONE, CONSTRAINT "PK_a2004c13039ea604ca3191ccdee" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "IX_list_sends_unfinished" ON "list_sends" ("updated_at") WHERE "status" <> 'done'`);
    await queryRunner.query(
      `ALTER TABLE "mailing_lists" ADD CONSTRAINT "FK_c348a4cb8ea5d864951d2fa2f21" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "list_subscribers" ADD CONSTRAINT "FK_a04472bab6ce191f480d2d47540" FOREIGN KEY ("list_id") REFERENCES "mailing_lists"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "list_sends" ADD CONSTRAINT "FK_25bff84c9ffbadea4240380a164" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "list_sends" ADD CONSTRAINT "FK_d25ddc4180c24e8045a46c3d149" FOREIGN KEY ("list_id") REFERENCES "mailing_lists"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "list_sends" DROP CONSTRAINT "FK_d25ddc4180c24e8045a46c3d149"`);
    await queryRunner.query(`ALTER TABLE "list_sends" DROP CONSTRAINT "FK_25bff84c9ffbadea4240380a164"`);
    await queryRunner.query(`ALTER TABLE "list_subscribers" DROP CONSTRAINT "FK_a04472bab6ce191f480d2d47540"`);
    await queryRunner.query(`ALTER TABLE "mailing_lists" DROP CONSTRAINT "FK_c348a4cb8ea5d864951d2fa2f21"`);
    await queryRunner.query(`DROP INDEX "public"."IX_list_sends_unfinished"`);
    await queryRunner.query(`DROP TABLE "list_sends"`);
    await queryRunner.query(`DROP INDEX "public"."IX_list_subscribers_list_status_email"`);
    await queryRunner.query(`DROP TABLE "list_subscribers"`);
    await queryRunner.query(`DROP INDEX "public"."UQ_mailing_lists_account_name"`);
    await queryRunner.query(`DROP INDEX "public"."IX_mailing_lists_account_created"`);
    await queryRunner.query(`DROP TABLE "mailing_lists"`);
  }
}
