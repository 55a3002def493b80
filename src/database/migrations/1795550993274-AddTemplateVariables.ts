import { MigrationInterface, QueryRunner } from 'typeorm';

export class AddTemplateVariables1795550993274 implements MigrationInterface {
  name = 'AddTemplateVariables1795550993274';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "templates" ADD "variables" jsonb`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "templates" DROP COLUMN "variables"`);
  }
}
