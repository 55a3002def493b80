import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A deferred message keeps the time of its next attempt, so that the sweeper, adding again a job Redis lost, puts
 * it back where it was in the D-20 schedule rather than at its start. A message deferred before this has none:
 * its next attempt comes when the sweeper finds it, as before.
 */
export class AddMessageNextAttemptAt1795785002000 implements MigrationInterface {
  name = 'AddMessageNextAttemptAt1795785002000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "messages" ADD "next_attempt_at" TIMESTAMP WITH TIME ZONE`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "messages" DROP COLUMN "next_attempt_at"`);
  }
}
