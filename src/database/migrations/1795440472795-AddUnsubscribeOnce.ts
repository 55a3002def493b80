import { MigrationInterface, QueryRunner } from 'typeorm';

export class AddUnsubscribeOnce1795440472795 implements MigrationInterface {
  name = 'AddUnsubscribeOnce1795440472795';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE UNIQUE INDEX "UQ_message_events_unsubscribed" ON "message_events" ("message_id", "recipient") WHERE "type" = 'unsubscribed'`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."UQ_message_events_unsubscribed"`);
  }
}
