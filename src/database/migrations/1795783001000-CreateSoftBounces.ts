import { MigrationInterface, QueryRunner } from 'typeorm';

/** Soft bounces counted per account and address (D-39): enough of them within a window suppress the address. */
export class CreateSoftBounces1795783001000 implements MigrationInterface {
  name = 'CreateSoftBounces1795783001000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "soft_bounces" ("account_id" character varying(40) NOT NULL, "email" character varying(320) NOT NULL, "message_id" character varying(40) NOT NULL, "occurred_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_soft_bounces" PRIMARY KEY ("account_id", "email", "message_id"))`,
    );
    await queryRunner.query(`CREATE INDEX "IX_soft_bounces_account_email_at" ON "soft_bounces" ("account_id", "email", "occurred_at") `);
    await queryRunner.query(
      `ALTER TABLE "soft_bounces" ADD CONSTRAINT "FK_soft_bounces_account" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "soft_bounces" DROP CONSTRAINT "FK_soft_bounces_account"`);
    await queryRunner.query(`DROP INDEX "public"."IX_soft_bounces_account_email_at"`);
    await queryRunner.query(`DROP TABLE "soft_bounces"`);
  }
}
