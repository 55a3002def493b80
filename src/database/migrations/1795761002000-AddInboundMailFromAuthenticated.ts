import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Whether a received message's envelope sender was authenticated (SPF, or DKIM aligned with it): delivery status
 * notifications about its forwards go only to such a sender. Messages received before it count as not authenticated.
 */
export class AddInboundMailFromAuthenticated1795761002000 implements MigrationInterface {
  name = 'AddInboundMailFromAuthenticated1795761002000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "inbound_messages" ADD "mail_from_authenticated" boolean NOT NULL DEFAULT false`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "inbound_messages" DROP COLUMN "mail_from_authenticated"`);
  }
}
