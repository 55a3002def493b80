import { createCipheriv, createPrivateKey, generateKeyPairSync, KeyObject, randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import { Client } from 'pg';
import { SMTPServer } from 'smtp-server';
import { dropDatabase, scratchDatabaseUrl, startApp } from './app';
import type { BenchApp, StartOptions } from './app';
import { benchMessage, createKey, createTenant, insertVerifiedDomain } from './fixtures';

const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
/** D-14: the most recipients one POST /email/batch takes. */
const BATCH_SIZE = 500;

export interface SmtpSink {
  url: string;
  received: number;
  /** Arrival times (ms, performance.now()) of every message. */
  arrivals: number[];
  close(): Promise<void>;
}

/** A local SMTP sink in the bench process that takes everything and only counts (no parsing: the sink should not be the bottleneck). */
export async function startSmtpSink(): Promise<SmtpSink> {
  const sink: SmtpSink = { url: '', received: 0, arrivals: [], close: () => Promise.resolve() };
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, _session, callback) {
      stream.on('data', () => undefined);
      stream.on('end', () => {
        sink.received++;
        sink.arrivals.push(performance.now());
        callback(null, 'OK');
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  sink.url = `smtp://127.0.0.1:${(server.server.address() as { port: number }).port}`;
  sink.close = () => new Promise((resolve) => server.close(() => resolve()));
  return sink;
}

/**
 * A tenant on a scratch database whose mail the workers can deliver: a verified domain with a DKIM key sealed
 * with the ENCRYPTION_KEY every app of the sender shares, and a usage key. The apps share one Redis prefix (one
 * queue) and run one at a time: an API-only app accepts a backlog and stops, then a delivering app drains it.
 */
export interface Sender {
  databaseUrl: string;
  /** The domain's DKIM key, parsed once (as the worker does), for a plain nodemailer loop to sign with. */
  dkimKey: KeyObject;
  /**
   * Accepts `count` copies of the bench message through POST /email/batch (500 a call, `inFlight` calls at once)
   * on an API-only app started for it and stopped after; returns the seconds the calls took.
   */
  accept(count: number, options?: { inFlight?: number; recipient?: (index: number) => string }): Promise<number>;
  /** A delivering app (APP_ROLE=all) on the sender's database and queue. */
  startDeliverer(env: Record<string, string>, options?: StartOptions): Promise<BenchApp>;
  /** Messages of the database by status. */
  statusCounts(): Promise<Record<string, number>>;
  close(): Promise<void>;
}

export async function prepareSender(): Promise<Sender> {
  const databaseUrl = scratchDatabaseUrl();
  const encryptionKey = randomBytes(32);
  const shared = {
    ENCRYPTION_KEY: encryptionKey.toString('hex'),
    REDIS_KEY_PREFIX: `mailroom-bench:email-${randomBytes(4).toString('hex')}:`,
    RATE_LIMIT_ENABLED: 'false',
  };
  const close = async () => {
    const redis = new Redis(REDIS_URL);
    try {
      const keys = await redis.keys(`${shared.REDIS_KEY_PREFIX}*`);
      for (let i = 0; i < keys.length; i += 10_000) await redis.unlink(...keys.slice(i, i + 10_000));
    } finally {
      redis.disconnect();
    }
    await dropDatabase(databaseUrl);
  };
  const privatePem = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  let key: string;
  try {
    const migrating = await startApp(databaseUrl, shared);
    try {
      const tenant = await createTenant(migrating, { tier: 'enterprise' });
      key = await createKey(migrating, tenant, { keyType: 'usage', permissions: ['email.send'] });
      await insertVerifiedDomain(databaseUrl, tenant.accountId, seal(privatePem, encryptionKey));
    } finally {
      await migrating.stop();
    }
  } catch (err) {
    await close();
    throw err;
  }

  const { to: _to, ...content } = JSON.parse(benchMessage()) as Record<string, string>;
  return {
    databaseUrl,
    dkimKey: createPrivateKey(privatePem),
    async accept(count, { inFlight = 4, recipient = () => 'reader@example.org' } = {}) {
      const api = await startApp(databaseUrl, { ...shared, MIGRATIONS_RUN: 'false' });
      try {
        const started = performance.now();
        let next = 0;
        await Promise.all(
          Array.from({ length: inFlight }, async () => {
            while (next < count) {
              const from = next;
              next = Math.min(count, next + BATCH_SIZE);
              const recipients = Array.from({ length: next - from }, (_, i) => ({ email: recipient(from + i) }));
              const res = await fetch(`${api.url}/email/batch`, {
                method: 'POST',
                headers: { 'X-Api-Key': key, 'Content-Type': 'application/json' },
                body: JSON.stringify({ ...content, recipients }),
              });
              const answer = (await res.json()) as { data?: { status: string }[] };
              const queued = answer.data?.filter((r) => r.status === 'queued').length;
              if (res.status !== 200 || queued !== recipients.length)
                throw new Error(`POST /email/batch answered ${res.status} with ${queued} of ${recipients.length} queued`);
            }
          }),
        );
        return (performance.now() - started) / 1000;
      } finally {
        await api.stop();
      }
    },
    startDeliverer: (env, options) => startApp(databaseUrl, { ...shared, APP_ROLE: 'all', MIGRATIONS_RUN: 'false', ...env }, options),
    async statusCounts() {
      const db = new Client({ connectionString: databaseUrl });
      await db.connect();
      try {
        const { rows } = await db.query<{ status: string; n: number }>('SELECT status, count(*)::int AS n FROM messages GROUP BY status');
        return Object.fromEntries(rows.map((row) => [row.status, row.n]));
      } finally {
        await db.end();
      }
    },
    close,
  };
}

/** What SecretBox.seal does, with the key the apps are started with. */
function seal(plaintext: string, key: Buffer): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return ['v1', iv, cipher.getAuthTag(), ciphertext].map((p) => (typeof p === 'string' ? p : p.toString('base64url'))).join('.');
}
