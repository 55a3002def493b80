import { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateAccountUsage1795443149890 implements MigrationInterface {
  name = 'CreateAccountUsage1795443149890';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "account_usage_hourly" ("account_id" character varying(40) NOT NULL, "hour" TIMESTAMP WITH TIME ZONE NOT NULL, "emails" bigint NOT NULL DEFAULT '0', "submissions" bigint NOT NULL DEFAULT '0', "last_email_at" TIMESTAMP WITH TIME ZONE, CONSTRAINT "PK_655ba36ae58a801454f61cfc956" PRIMARY KEY ("account_id", "hour"))`,
    );
    await queryRunner.query(
      `ALTER TABLE "account_usage_hourly" ADD CONSTRAINT "FK_d3b34c60c3d5f24f6152ff94bcc" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "account_usage_hourly" DROP CONSTRAINT "FK_d3b34c60c3d5f24f6152ff94bcc"`);
    await queryRunner.query(`DROP TABLE "account_usage_hourly"`);
  }
}
