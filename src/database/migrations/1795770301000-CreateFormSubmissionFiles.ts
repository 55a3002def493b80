import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Form uploads kept with their submission in the attachment store: each submission's references to its files' blobs
 * (the store's sweep leaves a referenced blob alone), deleted with the submission.
 */
export class CreateFormSubmissionFiles1795770301000 implements MigrationInterface {
  name = 'CreateFormSubmissionFiles1795770301000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "form_submission_files" ("submission_id" character varying(40) NOT NULL, "seq" integer NOT NULL, ` +
        `"hash" character varying(64) NOT NULL, CONSTRAINT "PK_form_submission_files" PRIMARY KEY ("submission_id", "seq"))`,
    );
    await queryRunner.query(`CREATE INDEX "IX_form_submission_files_hash" ON "form_submission_files" ("hash")`);
    await queryRunner.query(
      `ALTER TABLE "form_submission_files" ADD CONSTRAINT "FK_form_submission_files_submission" FOREIGN KEY ("submission_id") REFERENCES "form_submissions"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "form_submission_files" ADD CONSTRAINT "FK_form_submission_files_blob" FOREIGN KEY ("hash") REFERENCES "attachment_blobs"("hash") ON DELETE NO ACTION ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "form_submission_files" DROP CONSTRAINT "FK_form_submission_files_blob"`);
    await queryRunner.query(`ALTER TABLE "form_submission_files" DROP CONSTRAINT "FK_form_submission_files_submission"`);
    await queryRunner.query(`DROP INDEX "public"."IX_form_submission_files_hash"`);
    await queryRunner.query(`DROP TABLE "form_submission_files"`);
  }
}
