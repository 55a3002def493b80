import { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateTemplatesAndSuppression1795322973362 implements MigrationInterface {
  name = 'CreateTemplatesAndSuppression1795322973362';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "templates" ("id" character varying(40) NOT NULL, "account_id" character varying(40) NOT NULL, "name" character varying(100) NOT NULL, "description" character varying(500), "subject" text NOT NULL, "html" text, "text" text, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_515948649ce0bbbe391de702ae5" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE UNIQUE INDEX "UQ_templates_account_name" ON "templates" ("account_id", "name") `);
    await queryRunner.query(
      `CREATE TABLE "suppression_entries" ("id" character varying(40) NOT NULL, "account_id" character varying(40) NOT NULL, "email" character varying(320) NOT NULL, "reason" character varying(20) NOT NULL, "source" character varying(200), "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_8e3bf90cc190a418abb61b99b55" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "IDX_suppression_entries_account_created" ON "suppression_entries" ("account_id", "created_at", "id") `,
    );
    await queryRunner.query(`CREATE UNIQUE INDEX "UQ_suppression_entries_account_email" ON "suppression_entries" ("account_id", "email") `);
    await queryRunner.query(
      `ALTER TABLE "templates" ADD CONSTRAINT "FK_444e01e8e550ba2eccbcbbf4e07" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "suppression_entries" ADD CONSTRAINT "FK_61fc223beb7d45b71867565be22" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "suppression_entries" DROP CONSTRAINT "FK_61fc223beb7d45b71867565be22"`);
    await queryRunner.query(`ALTER TABLE "templates" DROP CONSTRAINT "FK_444e01e8e550ba2eccbcbbf4e07"`);
    await queryRunner.query(`DROP INDEX "public"."UQ_suppression_entries_account_email"`);
    await queryRunner.query(`DROP INDEX "public"."IDX_suppression_entries_account_created"`);
    await queryRunner.query(`DROP TABLE "suppression_entries"`);
    await queryRunner.query(`DROP INDEX "public"."UQ_templates_account_name"`);
    await queryRunner.query(`DROP TABLE "templates"`);
  }
}
