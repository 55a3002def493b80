import { Column, CreateDateColumn, Entity, Index, PrimaryColumn } from 'typeorm';

/**
 * The self-signed certificate the inbound SMTP server presents for STARTTLS when none is configured: made once for
 * its host name by whichever worker starts first, then read by every worker, so that all present the same one and
 * a restart keeps it.
 */
@Entity('inbound_tls_certificates')
@Index('UQ_inbound_tls_certificates_hostname', ['hostname'], { unique: true })
export class InboundTlsCertificate {
  @PrimaryColumn({ type: 'varchar', length: 40, primaryKeyConstraintName: 'PK_inbound_tls_certificates' })
  id: string;

  /** The certificate's common name: INBOUND_SMTP_HOSTNAME (lower-cased) when it was made. */
  @Column({ type: 'varchar', length: 253 })
  hostname: string;

  /** PEM. */
  @Column({ type: 'text' })
  certificate: string;

  /** PEM, sealed with SecretBox. */
  @Column({ type: 'text' })
  privateKey: string;

  /** The certificate's SHA-256 fingerprint, as `openssl x509 -fingerprint -sha256` prints it. */
  @Column({ type: 'varchar', length: 95 })
  fingerprint: string;

  @Column({ type: 'timestamptz' })
  notAfter: Date;

  @CreateDateColumn({ type: 'timestamptz' })
  createdAt: Date;
}
