import { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateProjectsAndCollections1795322780573 implements MigrationInterface {
  name = 'CreateProjectsAndCollections1795322780573';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "projects" ("id" character varying(40) NOT NULL, "account_id" character varying(40) NOT NULL, "name" character varying(200) NOT NULL, "slug" character varying(63) NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_6271df0a7aed1d6c0691ce6ac50" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE UNIQUE INDEX "UQ_projects_account_slug" ON "projects" ("account_id", "slug") `);
    await queryRunner.query(
      `CREATE TABLE "collections" ("id" character varying(40) NOT NULL, "account_id" character varying(40) NOT NULL, "slug" character varying(63) NOT NULL, "name" character varying(200) NOT NULL, "project_id" character varying(40), "forms" jsonb NOT NULL DEFAULT '{}', "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_21c00b1ebbd41ba1354242c5c4e" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "IDX_0c1e134df381ce2b2be2d5d6c0" ON "collections" ("project_id") `);
    await queryRunner.query(`CREATE UNIQUE INDEX "UQ_collections_account_slug" ON "collections" ("account_id", "slug") `);
    await queryRunner.query(`ALTER TABLE "domains" ADD "last_check_error" character varying(500)`);
    await queryRunner.query(
      `ALTER TABLE "projects" ADD CONSTRAINT "FK_286f70ef51cf6ecda509d85883d" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "collections" ADD CONSTRAINT "FK_741399e4a3d157fddd26d2a4600" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "collections" ADD CONSTRAINT "FK_0c1e134df381ce2b2be2d5d6c03" FOREIGN KEY ("project_id") REFERENCES "projects"("id") ON DELETE SET NULL ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "collections" DROP CONSTRAINT "FK_0c1e134df381ce2b2be2d5d6c03"`);
    await queryRunner.query(`ALTER TABLE "collections" DROP CONSTRAINT "FK_741399e4a3d157fddd26d2a4600"`);
    await queryRunner.query(`ALTER TABLE "projects" DROP CONSTRAINT "FK_286f70ef51cf6ecda509d85883d"`);
    await queryRunner.query(`ALTER TABLE "domains" DROP COLUMN "last_check_error"`);
    await queryRunner.query(`DROP INDEX "public"."UQ_collections_account_slug"`);
    await queryRunner.query(`DROP INDEX "public"."IDX_0c1e134df381ce2b2be2d5d6c0"`);
    await queryRunner.query(`DROP TABLE "collections"`);
    await queryRunner.query(`DROP INDEX "public"."UQ_projects_account_slug"`);
    await queryRunner.query(`DROP TABLE "projects"`);
  }
}
