import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What a submission's notification takes from its post's control fields (`_subject`, `_replyto`, `_format`,
 * `_language`, `_cc`), kept so that a notification made later (an instant form confirmed, a release from spam, a
 * suppression lifted) is the one the post asked for. Rows stored before have none: their later emails use the defaults.
 */
export class AddSubmissionNotificationOptions1795770801000 implements MigrationInterface {
  name = 'AddSubmissionNotificationOptions1795770801000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "form_submissions" ADD "notification_options" jsonb`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "form_submissions" DROP COLUMN "notification_options"`);
  }
}
