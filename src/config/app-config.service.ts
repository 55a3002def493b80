import { createHash, hkdfSync, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname } from 'node:path';
import { Injectable, Logger } from '@nestjs/common';
import { hashTaggedPrefix, isClusterUrl } from '../redis/redis-url';
import { EnvSchema, validateEnv } from './env.schema';

export type AccountTier = 'free' | 'pro' | 'enterprise';

/** Typed, validated configuration. Built once from the environment; tests build it from overrides. */
@Injectable()
export class AppConfigService {
  readonly env: EnvSchema;
  readonly encryptionKey: Buffer;

  constructor(env: EnvSchema = validateEnv(process.env)) {
    this.env = env;
    this.encryptionKey = resolveEncryptionKey(env);
  }

  /** A 32-byte key for one purpose (`info`, versioned), derived from ENCRYPTION_KEY with HKDF-SHA256. */
  derivedKey(info: string): Buffer {
    return Buffer.from(hkdfSync('sha256', this.encryptionKey, Buffer.alloc(0), info, 32));
  }

  static fromEnv(overrides: Record<string, string | undefined> = {}): AppConfigService {
    return new AppConfigService(validateEnv({ ...process.env, ...overrides }));
  }

  get port(): number {
    return this.env.PORT;
  }

  get publicUrl(): string {
    return this.env.PUBLIC_URL.replace(/\/+$/, '');
  }

  /** FORMS_FROM, or forms@<PUBLIC_URL host> (a host without a dot gets `.localhost`, so the address stays valid). */
  get formsFrom(): { name: string; address: string } {
    const configured = this.env.FORMS_FROM?.trim();
    if (configured) {
      const match = /^(.*)<([^<>]+)>\s*$/.exec(configured);
      return match ? { name: match[1].trim().replace(/^"|"$/g, ''), address: match[2].trim() } : { name: '', address: configured };
    }
    const host = new URL(this.publicUrl).hostname;
    return { name: '', address: `forms@${host.includes('.') ? host : `${host}.localhost`}` };
  }

  /** RETURN_PATH_DOMAIN, or the PUBLIC_URL host (lower-cased). */
  get returnPathDomain(): string {
    return (this.env.RETURN_PATH_DOMAIN ?? new URL(this.publicUrl).hostname).toLowerCase();
  }

  /** INBOUND_SMTP_HOSTNAME, or the machine's host name. */
  get inboundHostname(): string {
    return this.env.INBOUND_SMTP_HOSTNAME ?? hostname();
  }

  get keyPrefix(): string {
    return this.env.KEY_PREFIX;
  }

  /** REDIS_KEY_PREFIX, made a hash tag on a Redis Cluster (`{mailroom}:`) so that every key is in one slot. */
  get redisKeyPrefix(): string {
    return isClusterUrl(this.env.REDIS_URL) ? hashTaggedPrefix(this.env.REDIS_KEY_PREFIX) : this.env.REDIS_KEY_PREFIX;
  }

  /** The same configuration with another APP_ROLE. */
  withRole(role: EnvSchema['APP_ROLE']): AppConfigService {
    return new AppConfigService({ ...this.env, APP_ROLE: role });
  }

  get runsApi(): boolean {
    return this.env.APP_ROLE !== 'worker';
  }

  get runsWorkers(): boolean {
    return this.env.APP_ROLE !== 'api';
  }

  /** Express "trust proxy" value: false, a hop count, or a list of addresses / CIDRs / names. */
  get trustProxy(): boolean | number | string[] {
    const raw = this.env.TRUST_PROXY.trim();
    if (raw === '' || raw === 'false') return false;
    if (raw === 'true') return true;
    if (/^\d+$/.test(raw)) return Number(raw);
    return raw
      .split(',')
      .map((part) => part.trim())
      .filter(Boolean);
  }

  /** DNS_SERVERS as host:port strings; empty means the system resolver. */
  get dnsServers(): string[] {
    return (this.env.DNS_SERVERS ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
  }
}

/** The configuration, or the list of bad variables on stderr and exit code 1. */
export function loadConfigOrExit(overrides: Record<string, string> = {}): AppConfigService {
  try {
    return AppConfigService.fromEnv(overrides);
  } catch (err) {
    console.error((err as Error).message);
    process.exit(1);
  }
}

/**
 * ENCRYPTION_KEY protects secrets at rest. Production must set it; elsewhere a key is made once and kept
 * in data/encryption.key so that `npm start` works on its defaults and restarts can still decrypt.
 */
function resolveEncryptionKey(env: EnvSchema): Buffer {
  if (env.ENCRYPTION_KEY) {
    return /^[0-9a-fA-F]{64}$/.test(env.ENCRYPTION_KEY)
      ? Buffer.from(env.ENCRYPTION_KEY, 'hex')
      : Buffer.from(env.ENCRYPTION_KEY, 'base64');
  }
  if (env.NODE_ENV === 'production') {
    throw new Error('Invalid configuration:\n  ENCRYPTION_KEY: required when NODE_ENV=production');
  }
  if (env.NODE_ENV === 'test') {
    return createHash('sha256').update('mailroom-test-encryption-key').digest();
  }
  const file = 'data/encryption.key';
  if (!existsSync(file)) {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, randomBytes(32).toString('hex'), { mode: 0o600 });
    new Logger('Config').warn(`ENCRYPTION_KEY is not set: generated one in ${file}. Set ENCRYPTION_KEY in production.`);
  }
  return Buffer.from(readFileSync(file, 'utf8').trim(), 'hex');
}
