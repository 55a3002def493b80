import { MigrationInterface, QueryRunner } from 'typeorm';

const OPERATOR_PERMISSIONS = ['operator.queues', 'operator.queues.manage', 'operator.metrics'];

/**
 * Bull Board and /metrics now ask for operator.* permissions: the operator account's existing admin keys get
 * them, so that every install keeps the access it had. Subscriptions record whether they moved the account
 * to pro; an active one of a pro account did, as far as anyone can tell (until now cancelling always moved
 * the account back to free, and keeps doing so for these).
 */
export class AddOperatorPermissionsAndRaisedTier1795700005000 implements MigrationInterface {
  name = 'AddOperatorPermissionsAndRaisedTier1795700005000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "billing_subscriptions" ADD "raised_tier" boolean NOT NULL DEFAULT false`);
    await queryRunner.query(
      `UPDATE "billing_subscriptions" s SET "raised_tier" = true
         FROM "accounts" a
        WHERE a."id" = s."account_id" AND s."status" = 'active' AND a."tier" = 'pro'`,
    );
    await queryRunner.query(
      `UPDATE "api_keys" k
          SET "permissions" = k."permissions" || ARRAY(SELECT p FROM unnest($1::text[]) WITH ORDINALITY AS o(p, n)
                                                        WHERE p <> ALL(k."permissions") ORDER BY n)
         FROM "accounts" a
        WHERE a."id" = k."account_id" AND a."is_operator" AND k."key_type" = 'admin'`,
      [OPERATOR_PERMISSIONS],
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `UPDATE "api_keys" SET "permissions" = ARRAY(SELECT p FROM unnest("permissions") WITH ORDINALITY AS o(p, n)
                                                    WHERE p <> ALL($1::text[]) ORDER BY n)
        WHERE "permissions" && $1::text[]`,
      [OPERATOR_PERMISSIONS],
    );
    await queryRunner.query(`ALTER TABLE "billing_subscriptions" DROP COLUMN "raised_tier"`);
  }
}
