import { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateInboundMessages1795450455170 implements MigrationInterface {
  name = 'CreateInboundMessages1795450455170';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "inbound_messages" ("id" character varying(40) NOT NULL, "account_id" character varying(40) NOT NULL, "domain" character varying(253) NOT NULL, "mail_from" character varying(320) NOT NULL, "recipients" jsonb NOT NULL, "client_address" character varying(45) NOT NULL, "helo" character varying(255) NOT NULL, "trace" text NOT NULL, "size" integer NOT NULL, "source" bytea NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_4f21d40ad47ab9702cb1ee64590" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "IX_inbound_messages_account_created" ON "inbound_messages" ("account_id", "created_at") `);
    await queryRunner.query(`ALTER TABLE "messages" ADD "envelope_from" character varying(320)`);
    await queryRunner.query(`ALTER TABLE "messages" ADD "inbound_message_id" character varying(40)`);
    await queryRunner.query(
      `ALTER TABLE "inbound_messages" ADD CONSTRAINT "FK_16d4de797b0597a5a5cde3cde75" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "inbound_messages" DROP CONSTRAINT "FK_16d4de797b0597a5a5cde3cde75"`);
    await queryRunner.query(`ALTER TABLE "messages" DROP COLUMN "inbound_message_id"`);
    await queryRunner.query(`ALTER TABLE "messages" DROP COLUMN "envelope_from"`);
    await queryRunner.query(`DROP INDEX "public"."IX_inbound_messages_account_created"`);
    await queryRunner.query(`DROP TABLE "inbound_messages"`);
  }
}
