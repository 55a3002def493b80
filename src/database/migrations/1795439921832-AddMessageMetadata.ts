import { MigrationInterface, QueryRunner } from 'typeorm';

export class AddMessageMetadata1795439921832 implements MigrationInterface {
  name = 'AddMessageMetadata1795439921832';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "messages" ADD "metadata" jsonb`);
    await queryRunner.query(`ALTER TABLE "message_events" ADD "machine" boolean NOT NULL DEFAULT false`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "message_events" DROP COLUMN "machine"`);
    await queryRunner.query(`ALTER TABLE "messages" DROP COLUMN "metadata"`);
  }
}
