import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Each webhook's own limits: how many requests its endpoint gets at once (4 unless set) and, if set, per second.
 * Existing webhooks get the default and no rate limit.
 */
export class AddWebhookEndpointLimits1795764001000 implements MigrationInterface {
  name = 'AddWebhookEndpointLimits1795764001000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "webhooks" ADD "max_concurrency" integer NOT NULL DEFAULT 4`);
    await queryRunner.query(`ALTER TABLE "webhooks" ADD "rate_limit_per_second" integer`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "webhooks" DROP COLUMN "rate_limit_per_second"`);
    await queryRunner.query(`ALTER TABLE "webhooks" DROP COLUMN "max_concurrency"`);
  }
}
