import { createHash, createPrivateKey, generateKeyPairSync, randomBytes } from 'node:crypto';
import { createCipheriv } from 'node:crypto';
import Redis from 'ioredis';
import nodemailer from 'nodemailer';
import { SMTPServer } from 'smtp-server';
import { dropDatabase, scratchDatabaseUrl, sql, startApp } from '../lib/app';
import { createKey, createTenant } from '../lib/fixtures';
import { arrivalRate, waitUntil } from '../lib/arrivals';
import type { BenchOptions, Measurement, ScenarioResult } from '../lib/types';
import { BENCH_DOMAIN, benchMessage } from './email-accept';

const SHARE_TARGET = 0.6;
const RATE_TARGET = 1000;
const POOL_SIZE = 10;
const CONCURRENCY = 50;
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';

interface Sink {
  url: string;
  received: number;
  /** Arrival times (ms) of every message. */
  arrivals: number[];
  close(): Promise<void>;
}

/** A local SMTP sink that takes everything and only counts (no parsing: the sink should not be the bottleneck). */
async function startSink(): Promise<Sink> {
  const sink: Sink = { url: '', received: 0, arrivals: [], close: () => Promise.resolve() };
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

/** What SecretBox.seal does, with the key the worker will be started with. */
function seal(plaintext: string, key: Buffer): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return ['v1', iv, cipher.getAuthTag(), ciphertext].map((p) => (typeof p === 'string' ? p : p.toString('base64url'))).join('.');
}

/**
 * (b) Delivery: emails per second from the `email` queue to a local SMTP sink (worker: load the message,
 * pace it, DKIM-sign it, send it over the pooled transport, record the result) against a plain nodemailer
 * pooled loop sending the same DKIM-signed message to the same sink with the same pool and concurrency.
 * The messages are accepted first with no worker running; the worker then drains the queue, and the rate
 * is measured from its first to its last arrival at the sink.
 */
export async function run(_options: BenchOptions): Promise<ScenarioResult> {
  const count = Number(process.env.BENCH_EMAILS ?? 5000);
  const sink = await startSink();
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const privatePem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  // Parsed once, as the worker does: parsing the PEM for every signature would cost 4× the signature.
  const dkim = { domainName: BENCH_DOMAIN, keySelector: 'mr1', privateKey: createPrivateKey(privatePem) };

  // Baselines: the plain loop, unsigned and DKIM-signed like Mailroom's mail.
  const message = JSON.parse(benchMessage()) as { from: string; to: string; subject: string; text: string; html: string };
  const plainLoop = async (signed: boolean): Promise<number> => {
    const loop = nodemailer.createTransport({ pool: true, url: sink.url, maxConnections: POOL_SIZE, maxMessages: Infinity } as never);
    const start = sink.received;
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < count) {
          next++;
          await loop.sendMail({ ...message, ...(signed ? { dkim } : {}) });
        }
      }),
    );
    loop.close();
    return arrivalRate(sink.arrivals, start, count);
  };
  const unsignedRate = await plainLoop(false);
  const loopRate = await plainLoop(true);
  console.log(`  plain nodemailer pooled loop: ${unsignedRate} emails/s unsigned, ${loopRate} emails/s DKIM-signed`);

  // Mailroom: an API-only app accepts `count` messages, then a worker (pacer set high) drains the queue.
  const databaseUrl = scratchDatabaseUrl();
  const encryptionKey = randomBytes(32);
  const redisPrefix = `mailroom-bench:email-${randomBytes(4).toString('hex')}:`;
  const shared = { ENCRYPTION_KEY: encryptionKey.toString('hex'), REDIS_KEY_PREFIX: redisPrefix, RATE_LIMIT_ENABLED: 'false' };
  const api = await startApp(databaseUrl, shared);
  let worker: Awaited<ReturnType<typeof startApp>> | undefined;
  try {
    const tenant = await createTenant(api, { tier: 'enterprise' });
    const key = await createKey(api, tenant, { keyType: 'usage', permissions: ['email.send'] });
    const publicDer = publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
    await sql(
      databaseUrl,
      `INSERT INTO domains (id, account_id, name, status, verification_token, dkim_selector, dkim_private_key, dkim_public_key, verified_at)
       VALUES ($1, $2, $3, 'verified', $4, 'mr1', $5, $6, now())`,
      [
        `dom_${createHash('sha1').update(redisPrefix).digest('hex').slice(0, 20)}`,
        tenant.accountId,
        BENCH_DOMAIN,
        'x',
        seal(privatePem, encryptionKey),
        publicDer,
      ],
    );
    const headers = { 'X-Api-Key': key, 'Content-Type': 'application/json' };
    let accepted = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (accepted < count) {
          accepted++;
          const res = await fetch(`${api.url}/v1/send`, { method: 'POST', headers, body: benchMessage() });
          if (res.status !== 200) throw new Error(`POST /v1/send answered ${res.status}: ${await res.text()}`);
        }
      }),
    );

    const workerStart = sink.received;
    worker = await startApp(databaseUrl, {
      ...shared,
      APP_ROLE: 'all',
      MIGRATIONS_RUN: 'false',
      SMTP_URL: sink.url,
      SMTP_MAX_RATE: '1000000',
      SMTP_POOL_SIZE: String(POOL_SIZE),
      EMAIL_WORKER_CONCURRENCY: String(CONCURRENCY),
    });
    await waitUntil(() => sink.received - workerStart >= count, 600_000);
    const queueRate = arrivalRate(sink.arrivals, workerStart, count);
    console.log(`  Mailroom queue → SMTP: ${queueRate} emails/s`);

    const measurement = (label: string, rate: number, baseline?: string): Measurement => ({
      label,
      ...(baseline ? { baseline } : {}),
      requestsPerSec: rate,
      latencyP50Ms: 0,
      latencyP99Ms: 0,
      non2xx: 0,
      errors: 0,
    });
    const loopLabel = `plain nodemailer pooled loop, ${count} DKIM-signed emails`;
    const share = loopRate > 0 ? queueRate / loopRate : 0;
    return {
      scenario: 'email-delivery',
      description: 'Emails per second from the queue to a local SMTP sink against a plain nodemailer pooled loop (req/s = emails/s)',
      measurements: [
        measurement(`plain nodemailer pooled loop, ${count} unsigned emails`, unsignedRate),
        measurement(loopLabel, loopRate),
        measurement(`queue → SMTP sink, ${count} emails, pacer 1,000,000/s`, queueRate, loopLabel),
      ],
      targets: [
        {
          name: `queue → SMTP ≥ ${SHARE_TARGET * 100}% of the plain loop`,
          met: share >= SHARE_TARGET,
          detail: `${(share * 100).toFixed(1)}% (${queueRate} vs ${loopRate} emails/s)`,
        },
        { name: `queue → SMTP ≥ ${RATE_TARGET} emails/s`, met: queueRate >= RATE_TARGET, detail: `${queueRate} emails/s` },
      ],
    };
  } finally {
    await Promise.all([api.stop(), worker?.stop()]);
    const redis = new Redis(REDIS_URL);
    const keys = await redis.keys(`${redisPrefix}*`);
    if (keys.length) await redis.unlink(...keys);
    redis.disconnect();
    await dropDatabase(databaseUrl);
    await sink.close();
  }
}
