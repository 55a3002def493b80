import { X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { Injectable, Logger } from '@nestjs/common';
import { generate } from 'selfsigned';
import { DataSource } from 'typeorm';
import { SecretBox, SecretBoxError } from '../common/crypto/secret-box';
import { newId } from '../common/ids';
import { AppConfigService } from '../config/app-config.service';

/** A self-signed certificate is made valid this long; MX clients do not check it (opportunistic TLS). */
export const SELF_SIGNED_VALIDITY_DAYS = 3650;
/** A stored certificate this close to its end is replaced at the next start. */
export const RENEW_BEFORE_DAYS = 30;
const DAY_MS = 86_400_000;

/** What the inbound server presents for STARTTLS, and where it came from. */
export interface InboundTlsCredentials {
  key: string;
  cert: string;
  source: 'configured' | 'self-signed';
  /** SHA-256 fingerprint of the certificate, for the start-up log. */
  fingerprint: string;
}

interface StoredCertificate {
  certificate: string;
  private_key: string;
}

/**
 * The certificate of the inbound server's STARTTLS: INBOUND_SMTP_TLS_CERT and INBOUND_SMTP_TLS_KEY when both are set,
 * else a self-signed one for INBOUND_SMTP_HOSTNAME, made at first start and kept in inbound_tls_certificates (the key
 * sealed) so that every worker, now and after a restart, presents the same one. Workers starting together may each
 * make one; the first INSERT wins and all use its row.
 */
@Injectable()
export class InboundTls {
  private readonly logger = new Logger(InboundTls.name);

  constructor(
    private readonly config: AppConfigService,
    private readonly dataSource: DataSource,
    private readonly box: SecretBox,
  ) {}

  /** null when INBOUND_SMTP_STARTTLS is false. */
  async credentials(): Promise<InboundTlsCredentials | null> {
    const { env } = this.config;
    if (!env.INBOUND_SMTP_STARTTLS) return null;
    if (env.INBOUND_SMTP_TLS_CERT && env.INBOUND_SMTP_TLS_KEY) {
      const [cert, key] = await Promise.all([readFile(env.INBOUND_SMTP_TLS_CERT, 'utf8'), readFile(env.INBOUND_SMTP_TLS_KEY, 'utf8')]);
      return { cert, key, source: 'configured', fingerprint: new X509Certificate(cert).fingerprint256 };
    }
    return this.selfSigned(this.config.inboundHostname.toLowerCase());
  }

  private async selfSigned(hostname: string): Promise<InboundTlsCredentials> {
    const stored = await this.stored(hostname);
    const usable = stored && this.open(stored);
    if (usable) return usable;
    const made = await selfSignedCertificate(hostname, new Date());
    const fingerprint = new X509Certificate(made.cert).fingerprint256;
    // Replaces only a row that is due for renewal or that no configured key opens (stored.private_key).
    await this.dataSource.query(
      `INSERT INTO inbound_tls_certificates (id, hostname, certificate, private_key, fingerprint, not_after)
       VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (hostname) DO UPDATE SET id = EXCLUDED.id, certificate = EXCLUDED.certificate,
         private_key = EXCLUDED.private_key, fingerprint = EXCLUDED.fingerprint, not_after = EXCLUDED.not_after, created_at = now()
       WHERE inbound_tls_certificates.not_after <= now() + make_interval(days => $7) OR inbound_tls_certificates.private_key = $8`,
      [
        newId('tls'),
        hostname,
        made.cert,
        this.box.seal(made.key),
        fingerprint,
        made.notAfter,
        RENEW_BEFORE_DAYS,
        stored?.private_key ?? '',
      ],
    );
    const winner = await this.stored(hostname);
    const credentials = winner && this.open(winner);
    if (!credentials) throw new Error(`The inbound TLS certificate for ${hostname} could not be stored`);
    if (credentials.fingerprint === fingerprint) this.logger.log(`Made a self-signed certificate for ${hostname} (inbound STARTTLS)`);
    return credentials;
  }

  /** The stored certificate unless it is due for renewal. */
  private async stored(hostname: string): Promise<StoredCertificate | null> {
    const rows: StoredCertificate[] = await this.dataSource.query(
      `SELECT certificate, private_key FROM inbound_tls_certificates
       WHERE hostname = $1 AND not_after > now() + make_interval(days => $2)`,
      [hostname, RENEW_BEFORE_DAYS],
    );
    return rows[0] ?? null;
  }

  /** null when no configured key opens the private key (ENCRYPTION_KEY changed without ENCRYPTION_KEY_PREVIOUS). */
  private open(stored: StoredCertificate): InboundTlsCredentials | null {
    try {
      const key = this.box.open(stored.private_key);
      return { cert: stored.certificate, key, source: 'self-signed', fingerprint: new X509Certificate(stored.certificate).fingerprint256 };
    } catch (err) {
      if (!(err instanceof SecretBoxError)) throw err;
      this.logger.warn(`The stored inbound TLS key opens with no configured key (${err.message}): making a new certificate`);
      return null;
    }
  }
}

/** A self-signed RSA certificate for `hostname` (its common name and only DNS name), valid SELF_SIGNED_VALIDITY_DAYS. */
export async function selfSignedCertificate(hostname: string, now: Date): Promise<{ cert: string; key: string; notAfter: Date }> {
  const notAfter = new Date(now.getTime() + SELF_SIGNED_VALIDITY_DAYS * DAY_MS);
  const pems = await generate([{ name: 'commonName', value: hostname }], {
    keyType: 'rsa',
    keySize: 2048,
    algorithm: 'sha256',
    // A day early: a client whose clock runs behind ours still finds it valid.
    notBeforeDate: new Date(now.getTime() - DAY_MS),
    notAfterDate: notAfter,
  });
  return { cert: pems.cert, key: pems.private, notAfter };
}
