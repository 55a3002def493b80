import { MigrationInterface, QueryRunner } from 'typeorm';

export class AddMessageHeaderIdIndex1795440490580 implements MigrationInterface {
  name = 'AddMessageHeaderIdIndex1795440490580';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE INDEX "IX_messages_header_message_id" ON "messages" ("header_message_id") `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."IX_messages_header_message_id"`);
  }
}
