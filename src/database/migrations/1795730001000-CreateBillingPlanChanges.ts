import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Billing periods are cut at each subscribe, plan change and cancel, recorded from now on in
 * billing_plan_changes. Existing subscriptions get the history they can tell: a change at their creation, with
 * the plan they have now (earlier plan changes were not recorded), and one at their cancellation. How many of
 * the change hour's emails came before it was not recorded either: the whole hour goes to the subscription
 * (0 before a creation, the hour's emails before a cancellation). The tiers are the account's as it is now,
 * free before a subscription that raised it to pro.
 */
export class CreateBillingPlanChanges1795730001000 implements MigrationInterface {
  name = 'CreateBillingPlanChanges1795730001000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "billing_plan_changes" ("id" character varying(40) NOT NULL, "account_id" character varying(40) NOT NULL, "at" TIMESTAMP WITH TIME ZONE NOT NULL, "plan" character varying(32), "tier_before" character varying(16) NOT NULL, "tier_after" character varying(16) NOT NULL, "subscription_id" character varying(40) NOT NULL, "hour_emails_before" bigint NOT NULL, CONSTRAINT "PK_35ca2f883f73f275adaf4a89cb7" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "IDX_billing_plan_changes_account_at" ON "billing_plan_changes" ("account_id", "at") `);
    await queryRunner.query(
      `ALTER TABLE "billing_plan_changes" ADD CONSTRAINT "FK_7a3a2fa0fe96b107252b98b409b" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "billing_plan_changes" ADD CONSTRAINT "FK_87f3cf3fcf2d182c7e49d21044d" FOREIGN KEY ("subscription_id") REFERENCES "billing_subscriptions"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `INSERT INTO "billing_plan_changes" ("id", "account_id", "at", "plan", "tier_before", "tier_after", "subscription_id", "hour_emails_before")
       SELECT 'pch_' || left(md5(s."id" || ':created'), 22), s."account_id", s."created_at", s."plan",
              CASE WHEN s."raised_tier" THEN 'free' ELSE a."tier" END,
              CASE WHEN a."tier" = 'free' THEN 'pro' ELSE a."tier" END,
              s."id", 0
         FROM "billing_subscriptions" s JOIN "accounts" a ON a."id" = s."account_id"`,
    );
    await queryRunner.query(
      `INSERT INTO "billing_plan_changes" ("id", "account_id", "at", "plan", "tier_before", "tier_after", "subscription_id", "hour_emails_before")
       SELECT 'pch_' || left(md5(s."id" || ':canceled'), 22), s."account_id", s."canceled_at", NULL,
              CASE WHEN a."tier" = 'free' THEN 'pro' ELSE a."tier" END,
              a."tier",
              s."id",
              COALESCE((SELECT u."emails" FROM "account_usage_hourly" u
                         WHERE u."account_id" = s."account_id" AND u."hour" = date_trunc('hour', s."canceled_at", 'UTC')), 0)
         FROM "billing_subscriptions" s JOIN "accounts" a ON a."id" = s."account_id"
        WHERE s."status" = 'canceled' AND s."canceled_at" IS NOT NULL`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "billing_plan_changes" DROP CONSTRAINT "FK_87f3cf3fcf2d182c7e49d21044d"`);
    await queryRunner.query(`ALTER TABLE "billing_plan_changes" DROP CONSTRAINT "FK_7a3a2fa0fe96b107252b98b409b"`);
    await queryRunner.query(`DROP INDEX "public"."IDX_billing_plan_changes_account_at"`);
    await queryRunner.query(`DROP TABLE "billing_plan_changes"`);
  }
}
