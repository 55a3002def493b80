import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Retention: a message's body can be cleared (content_swept_at says when), a received message's raw bytes too
 * (source made nullable, source_swept_at). The indexes the sweeps use come next (IndexRetentionCandidates).
 */
export class AddRetention1795744001000 implements MigrationInterface {
  name = 'AddRetention1795744001000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "messages" ADD "content_swept_at" TIMESTAMP WITH TIME ZONE`);
    await queryRunner.query(`ALTER TABLE "inbound_messages" ADD "source_swept_at" TIMESTAMP WITH TIME ZONE`);
    await queryRunner.query(`ALTER TABLE "inbound_messages" ALTER COLUMN "source" DROP NOT NULL`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    // Raw bytes already swept cannot come back: those received messages keep an empty body.
    await queryRunner.query(`UPDATE "inbound_messages" SET "source" = ''::bytea WHERE "source" IS NULL`);
    await queryRunner.query(`ALTER TABLE "inbound_messages" ALTER COLUMN "source" SET NOT NULL`);
    await queryRunner.query(`ALTER TABLE "inbound_messages" DROP COLUMN "source_swept_at"`);
    await queryRunner.query(`ALTER TABLE "messages" DROP COLUMN "content_swept_at"`);
  }
}
