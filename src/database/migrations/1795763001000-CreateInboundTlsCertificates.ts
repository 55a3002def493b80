import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The inbound SMTP server offers STARTTLS without a configured certificate: the self-signed one it makes at first
 * start is kept here (its private key sealed), so that every worker presents the same certificate and a restart
 * keeps it.
 */
export class CreateInboundTlsCertificates1795763001000 implements MigrationInterface {
  name = 'CreateInboundTlsCertificates1795763001000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "inbound_tls_certificates" ("id" character varying(40) NOT NULL, "hostname" character varying(253) NOT NULL, "certificate" text NOT NULL, "private_key" text NOT NULL, "fingerprint" character varying(95) NOT NULL, "not_after" TIMESTAMP WITH TIME ZONE NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_inbound_tls_certificates" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE UNIQUE INDEX "UQ_inbound_tls_certificates_hostname" ON "inbound_tls_certificates" ("hostname") `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."UQ_inbound_tls_certificates_hostname"`);
    await queryRunner.query(`DROP TABLE "inbound_tls_certificates"`);
  }
}
