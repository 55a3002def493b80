import { createHash, hkdfSync, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Injectable } from '@nestjs/common';
import { type LogSettings, rootLogger } from '../logging/root-logger';
import { hashTaggedPrefix, isClusterUrl } from './redis-url';
import { type ConnectionShares, shareConnections } from './connection-budget';
import { ConfigurationError, EnvSchema, logSettingsOf, validateEnv } from './env.schema';

export type AccountTier = 'free' | 'pro' | 'enterprise';

/** Typed, validated configuration. Built once from the environment; tests build it from overrides. */
@Injectable()
export class AppConfigService {
  readonly env: EnvSchema;
  /** ENCRYPTION_KEY: seals every secret and makes every MAC. */
  readonly encryptionKey: Buffer;
  /** ENCRYPTION_KEY_PREVIOUS, in the order given (without repeats of the current key): only open and verify. */
  readonly previousEncryptionKeys: readonly Buffer[];

  /** The file the key was read from when ENCRYPTION_KEY is unset (development): start-up says so. */
  readonly encryptionKeyFile?: string;

  constructor(
    env: EnvSchema = validateEnv(process.env),
    /** The thread that serves HTTP beside worker threads (APP_ROLE=all): its database pool is its share of the budget. */
    private readonly httpThreadBesideWorkers = false,
  ) {
    this.env = env;
    ({ key: this.encryptionKey, file: this.encryptionKeyFile } = resolveEncryptionKey(env));
    this.previousEncryptionKeys = previousEncryptionKeys(env, this.encryptionKey);
  }

  /** The current key first, then the previous ones: make with the first, accept what any of them made. */
  get encryptionKeys(): readonly Buffer[] {
    return [this.encryptionKey, ...this.previousEncryptionKeys];
  }

  /** A 32-byte key for one purpose (`info`, versioned), derived from ENCRYPTION_KEY with HKDF-SHA256. */
  derivedKey(info: string): Buffer {
    return deriveKey(this.encryptionKey, info);
  }

  /**
   * The key for `info` derived from each of `encryptionKeys`, current first. A MAC is made with the first only and
   * accepted under any of them, so that what went out in mail before a key rotation still verifies.
   */
  derivedKeys(info: string): Buffer[] {
    return this.encryptionKeys.map((key) => deriveKey(key, info));
  }

  get logSettings(): LogSettings {
    return { level: this.env.LOG_LEVEL, format: this.env.LOG_FORMAT };
  }

  static fromEnv(overrides: Record<string, string | undefined> = {}): AppConfigService {
    return new AppConfigService(validateEnv({ ...process.env, ...overrides }));
  }

  get port(): number {
    return this.env.PORT;
  }

  /** PUBLIC_URL without a trailing slash, or http://localhost:<PORT>, so that links follow PORT on their own. */
  get publicUrl(): string {
    return (this.env.PUBLIC_URL ?? `http://localhost:${this.port}`).replace(/\/+$/, '');
  }

  /** The PUBLIC_URL host is only reachable from this machine (localhost, a bare host name or a loopback address). */
  get isLocalPublicUrl(): boolean {
    const host = new URL(this.publicUrl).hostname;
    return !host.includes('.') || host.endsWith('.localhost') || /^127\.|^\[::1\]$/.test(host);
  }

  /**
   * FORMS_FROM, or forms@<PUBLIC_URL host>. A host without a dot is no mail domain: `localhost` becomes
   * `mailroom.localhost`, another bare name `<name>.localhost`, so the address stays valid.
   */
  get formsFrom(): { name: string; address: string } {
    const configured = this.env.FORMS_FROM?.trim();
    if (configured) {
      const match = /^(.*)<([^<>]+)>\s*$/.exec(configured);
      return match ? { name: match[1].trim().replace(/^"|"$/g, ''), address: match[2].trim() } : { name: '', address: configured };
    }
    const host = new URL(this.publicUrl).hostname;
    const domain = host.includes('.') ? host : host === 'localhost' ? 'mailroom.localhost' : `${host}.localhost`;
    return { name: '', address: `forms@${domain}` };
  }

  /** The SPF mechanism each domain is advised to publish: DOMAIN_SPF_INCLUDE's include, or the PUBLIC_URL host's A record. */
  get spfMechanism(): string {
    return this.env.DOMAIN_SPF_INCLUDE ? `include:${this.env.DOMAIN_SPF_INCLUDE}` : `a:${new URL(this.publicUrl).hostname}`;
  }

  /** RETURN_PATH_DOMAIN, or the PUBLIC_URL host (lower-cased). */
  get returnPathDomain(): string {
    return (this.env.RETURN_PATH_DOMAIN ?? new URL(this.publicUrl).hostname).toLowerCase();
  }

  /** UPLOAD_DIR, or mailroom-uploads in the system's temporary directory. */
  get uploadDir(): string {
    return this.env.UPLOAD_DIR || join(tmpdir(), 'mailroom-uploads');
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

  /** The configuration of the thread that serves HTTP while worker threads run the queues (APP_ROLE=all). */
  httpThread(): AppConfigService {
    return new AppConfigService({ ...this.env, APP_ROLE: 'api' }, true);
  }

  /** How the process's DATABASE_POOL_SIZE and SMTP_POOL_SIZE are shared out among its threads under APP_ROLE=all. */
  get connectionShares(): ConnectionShares {
    return shareConnections(this.env);
  }

  /**
   * Connections this thread's pool may open to DATABASE_URL: DATABASE_POOL_SIZE, or the HTTP thread's share of it. A
   * worker thread is configured as a worker process whose DATABASE_POOL_SIZE is its share (WorkerSupervisor).
   */
  get databasePoolSize(): number {
    return this.httpThreadBesideWorkers ? this.connectionShares.httpDatabase : this.env.DATABASE_POOL_SIZE;
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

/** The configuration, or a fatal log line per bad variable and exit code 1. */
export function loadConfigOrExit(overrides: Record<string, string> = {}): AppConfigService {
  try {
    return AppConfigService.fromEnv(overrides);
  } catch (err) {
    const logger = rootLogger(logSettingsOf(process.env));
    const problems = err instanceof ConfigurationError ? err.problems : [(err as Error).message];
    for (const problem of problems) logger.fatal(`Invalid configuration: ${problem}`);
    process.exit(1);
  }
}

/**
 * ENCRYPTION_KEY protects secrets at rest. Production must set it; elsewhere a key is made once and kept
 * in data/encryption.key so that `npm start` works on its defaults and restarts can still decrypt.
 */
function resolveEncryptionKey(env: EnvSchema): { key: Buffer; file?: string } {
  if (env.ENCRYPTION_KEY) return { key: parseKey(env.ENCRYPTION_KEY) };
  if (env.NODE_ENV === 'production') throw new ConfigurationError(['ENCRYPTION_KEY is required when NODE_ENV=production']);
  if (env.NODE_ENV === 'test') {
    return { key: createHash('sha256').update('mailroom-test-encryption-key').digest() };
  }
  const file = 'data/encryption.key';
  if (!existsSync(file)) {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, randomBytes(32).toString('hex'), { mode: 0o600 });
  }
  return { key: Buffer.from(readFileSync(file, 'utf8').trim(), 'hex'), file };
}

/** ENCRYPTION_KEY_PREVIOUS as keys; one equal to the current key, or given twice, counts once (it adds nothing). */
function previousEncryptionKeys(env: EnvSchema, current: Buffer): Buffer[] {
  const keys: Buffer[] = [];
  for (const text of (env.ENCRYPTION_KEY_PREVIOUS ?? '').split(',')) {
    if (!text.trim()) continue;
    const key = parseKey(text.trim());
    if (!key.equals(current) && !keys.some((known) => known.equals(key))) keys.push(key);
  }
  return keys;
}

/** 64 hex characters or base64 of 32 bytes (the schema checked the shape). */
function parseKey(text: string): Buffer {
  return /^[0-9a-fA-F]{64}$/.test(text) ? Buffer.from(text, 'hex') : Buffer.from(text, 'base64');
}

function deriveKey(key: Buffer, info: string): Buffer {
  return Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), info, 32));
}
