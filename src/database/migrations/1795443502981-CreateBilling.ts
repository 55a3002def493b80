import { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateBilling1795443502981 implements MigrationInterface {
  name = 'CreateBilling1795443502981';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "billing_customers" ("id" character varying(40) NOT NULL, "account_id" character varying(40) NOT NULL, "email" character varying(320) NOT NULL, "name" character varying(200) NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_33443c37051e342361f61a54b86" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE UNIQUE INDEX "UQ_billing_customers_account" ON "billing_customers" ("account_id") `);
    await queryRunner.query(
      `CREATE TABLE "billing_subscriptions" ("id" character varying(40) NOT NULL, "account_id" character varying(40) NOT NULL, "customer_id" character varying(40) NOT NULL, "plan" character varying(32) NOT NULL, "status" character varying(16) NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "canceled_at" TIMESTAMP WITH TIME ZONE, CONSTRAINT "CHK_billing_subscriptions_status" CHECK ("status" IN ('active', 'canceled')), CONSTRAINT "PK_da12bd094f95ed1a9ad21b0b2df" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "IDX_billing_subscriptions_account_created" ON "billing_subscriptions" ("account_id", "created_at") `,
    );
    await queryRunner.query(
      `CREATE UNIQUE INDEX "UQ_billing_subscriptions_active" ON "billing_subscriptions" ("account_id") WHERE "status" = 'active'`,
    );
    await queryRunner.query(
      `ALTER TABLE "billing_customers" ADD CONSTRAINT "FK_c4a0209458c0679b3a00400fdd9" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "billing_subscriptions" ADD CONSTRAINT "FK_832dd9e3c9eec5203b1b26bfe32" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "billing_subscriptions" ADD CONSTRAINT "FK_b4fe3d98619813c9f254fd1108c" FOREIGN KEY ("customer_id") REFERENCES "billing_customers"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "billing_subscriptions" DROP CONSTRAINT "FK_b4fe3d98619813c9f254fd1108c"`);
    await queryRunner.query(`ALTER TABLE "billing_subscriptions" DROP CONSTRAINT "FK_832dd9e3c9eec5203b1b26bfe32"`);
    await queryRunner.query(`ALTER TABLE "billing_customers" DROP CONSTRAINT "FK_c4a0209458c0679b3a00400fdd9"`);
    await queryRunner.query(`DROP INDEX "public"."UQ_billing_subscriptions_active"`);
    await queryRunner.query(`DROP INDEX "public"."IDX_billing_subscriptions_account_created"`);
    await queryRunner.query(`DROP TABLE "billing_subscriptions"`);
    await queryRunner.query(`DROP INDEX "public"."UQ_billing_customers_account"`);
    await queryRunner.query(`DROP TABLE "billing_customers"`);
  }
}
