import { MigrationInterface, QueryRunner } from 'typeorm';

export class AddForwardsUsage1795700002000 implements MigrationInterface {
  name = 'AddForwardsUsage1795700002000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "account_usage_hourly" ADD "forwards" bigint NOT NULL DEFAULT '0'`);
    // Forwarded mail was metered as emails: move it to forwards, hour by hour (a message's row was written in the
    // transaction that inserted it, so its created_at falls in the row's hour), so that it stops spending
    // emails_per_month at once.
    await queryRunner.query(
      `UPDATE "account_usage_hourly" u
          SET "forwards" = LEAST(u."emails", f.n), "emails" = u."emails" - LEAST(u."emails", f.n)
         FROM (SELECT "account_id", date_trunc('hour', "created_at", 'UTC') AS hour, sum(jsonb_array_length("recipients"))::bigint AS n
                 FROM "messages" WHERE "inbound_message_id" IS NOT NULL GROUP BY 1, 2) f
        WHERE u."account_id" = f."account_id" AND u."hour" = f.hour`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`UPDATE "account_usage_hourly" SET "emails" = "emails" + "forwards"`);
    await queryRunner.query(`ALTER TABLE "account_usage_hourly" DROP COLUMN "forwards"`);
  }
}
