import { ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import Bull from 'bull';
import nodemailer from 'nodemailer';
import { Client } from 'pg';
import { freePort } from '../../test/support/free-port';
import { smtpGreets } from '../../test/support/smtp-greeting';
import { dropDatabase, scratchDatabaseUrl, sql, startApp } from '../lib/app';
import { waitUntil } from '../lib/arrivals';
import { BENCH_DOMAIN, createTenant, insertVerifiedDomain } from '../lib/fixtures';
import { average } from '../lib/load';
import type { BenchOptions, Measurement, ScenarioResult } from '../lib/types';

const SHARE_TARGET = 0.8;
const POOL_SIZE = 10;
const CONCURRENCY = 50;
const WARMUP_SEC = 2;
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const ALIAS = `info@${BENCH_DOMAIN}`;
const DESTINATION = 'reader@example.org';
const SENDER = 'sender@origin.test';
const NAIVE_TABLE = 'bare_inbound_messages';

let sequence = 0;

/** A small message (about 340 bytes) as a mail server would relay it; every one has its own subject and Message-ID. */
function inboundMessage(): Buffer {
  const n = ++sequence;
  return Buffer.from(
    [
      'From: Sender <sender@origin.test>',
      `To: ${ALIAS}`,
      `Subject: Order ${n} has shipped`,
      `Message-ID: <bench-${n}-${Date.now()}@origin.test>`,
      `Date: ${new Date().toUTCString()}`,
      'MIME-Version: 1.0',
      'Content-Type: text/plain; charset=utf-8',
      '',
      'Hello,',
      '',
      'your order has shipped and should arrive within three working days.',
      '',
      'Regards',
      '',
    ].join('\r\n'),
  );
}

interface SmtpRun {
  /** Messages answered 250 (warm-up included, for the stored-rows check). */
  accepted: number;
  measurement: Measurement;
}

/**
 * CONCURRENCY send loops over one nodemailer pool of POOL_SIZE connections to `port` for `durationSec` (after a
 * WARMUP_SEC run on the same pool): messages answered 250 per second, and each send's latency as the client saw it.
 * An SMTP refusal counts in non2xx, anything else (a dropped connection) in errors.
 */
async function sendLoop(label: string, port: number, durationSec: number): Promise<SmtpRun> {
  const transport = nodemailer.createTransport({
    pool: true,
    host: '127.0.0.1',
    port,
    secure: false,
    ignoreTLS: true,
    maxConnections: POOL_SIZE,
    maxMessages: Infinity,
  } as never);
  let accepted = 0;
  const run = async (seconds: number) => {
    const latencies: number[] = [];
    let refused = 0;
    let errors = 0;
    const start = performance.now();
    const deadline = start + seconds * 1000;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (performance.now() < deadline) {
          const sent = performance.now();
          try {
            await transport.sendMail({ envelope: { from: SENDER, to: [ALIAS] }, raw: inboundMessage() });
            latencies.push(performance.now() - sent);
            accepted++;
          } catch (err) {
            if ((err as { responseCode?: number }).responseCode) refused++;
            else errors++;
            await new Promise((resolve) => setTimeout(resolve, 10));
          }
        }
      }),
    );
    const elapsed = (performance.now() - start) / 1000;
    latencies.sort((a, b) => a - b);
    const pick = (q: number) =>
      latencies.length ? Math.round(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] * 10) / 10 : 0;
    return {
      label,
      requestsPerSec: Math.round(latencies.length / elapsed),
      latencyP50Ms: pick(0.5),
      latencyP99Ms: pick(0.99),
      non2xx: refused,
      errors,
    };
  };
  try {
    await run(WARMUP_SEC);
    const measurement = await run(durationSec);
    return { measurement, accepted };
  } finally {
    transport.close();
  }
}

/** bench/lib/bare-smtp-server.ts in its own process; `databaseUrl` makes it the naive durable server. */
async function startBareServer(databaseUrl?: string): Promise<{ port: number; stop(): Promise<void> }> {
  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, ['-r', '@swc-node/register', join(__dirname, '..', 'lib', 'bare-smtp-server.ts')], {
    cwd: join(__dirname, '..', '..'),
    env: {
      PATH: process.env.PATH,
      NODE_ENV: 'production',
      BARE_SMTP_PORT: String(port),
      BARE_POOL_SIZE: String(POOL_SIZE),
      BARE_TABLE: NAIVE_TABLE,
      ...(databaseUrl ? { BARE_DATABASE_URL: databaseUrl } : {}),
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  let ready = false;
  const poll = setInterval(() => void smtpGreets(port).then((ok) => (ready ||= ok)), 100);
  try {
    await waitUntil(() => ready || child.exitCode !== null, 30_000);
  } finally {
    clearInterval(poll);
  }
  if (!ready) throw new Error(`the bare SMTP server exited with code ${child.exitCode}`);
  return {
    port,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGKILL');
      }),
  };
}

async function count(databaseUrl: string, query: string): Promise<number> {
  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return Number((await client.query(query)).rows[0].n);
  } finally {
    await client.end();
  }
}

/**
 * Inbound forwarding: messages per second that Mailroom's inbound SMTP server answers 250 for (RCPT TO checked
 * against the domain's rule, the message and the message forwarding it committed before the 250, its job queued)
 * for one alias, against a bare smtp-server that writes each message with one INSERT before its 250 (the naive
 * durable server), and the same server writing nothing (the upper bound). All three run in processes of their
 * own and are driven by the same nodemailer pool, alternately. Mailroom's `email` queue is paused: delivery
 * (measured by `email-delivery`) does not compete with acceptance, as nothing is delivered by the baselines.
 */
export async function run(options: BenchOptions): Promise<ScenarioResult> {
  const databaseUrl = scratchDatabaseUrl();
  const inboundPort = await freePort();
  const app = await startApp(databaseUrl, {
    APP_ROLE: 'all',
    RATE_LIMIT_ENABLED: 'false',
    INBOUND_SMTP_PORT: String(inboundPort),
    INBOUND_SMTP_HOST: '127.0.0.1',
  });
  const emailQueue = new Bull('email', REDIS_URL, { prefix: `${app.redisPrefix}bull` });
  const servers: { stop(): Promise<void> }[] = [];
  try {
    await emailQueue.pause();
    const tenant = await createTenant(app, { tier: 'enterprise' });
    await insertVerifiedDomain(databaseUrl, tenant.accountId);
    const rule = await fetch(`${app.url}/domains/${BENCH_DOMAIN}`, {
      method: 'PUT',
      headers: { Authorization: `Bearer ${tenant.adminKey}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ forwarding: { info: [DESTINATION] } }),
    });
    if (!rule.ok) throw new Error(`PUT /domains/${BENCH_DOMAIN} answered ${rule.status}: ${await rule.text()}`);
    const probe = nodemailer.createTransport({ host: '127.0.0.1', port: inboundPort, secure: false, ignoreTLS: true });
    const probed = await probe.sendMail({ envelope: { from: SENDER, to: [ALIAS] }, raw: inboundMessage() });
    probe.close();
    if (!/^250 2\.0\.0 Ok: queued as inb_/.test(probed.response)) throw new Error(`the inbound server answered ${probed.response}`);

    await sql(
      databaseUrl,
      `CREATE TABLE ${NAIVE_TABLE} (id bigserial PRIMARY KEY, mail_from text NOT NULL, recipients text[] NOT NULL, source bytea NOT NULL, received_at timestamptz NOT NULL DEFAULT now())`,
    );
    const upper = await startBareServer();
    servers.push(upper);
    const naive = await startBareServer(databaseUrl);
    servers.push(naive);

    const upperLabel = 'bare smtp-server, stores nothing (upper bound)';
    const naiveLabel = 'bare smtp-server, one INSERT per message before the 250 (naive durable)';
    const mailroomLabel = 'Mailroom inbound SMTP, alias → 1 destination (queue paused)';
    const sides = [
      { label: upperLabel, port: upper.port },
      { label: naiveLabel, port: naive.port },
      { label: mailroomLabel, port: inboundPort },
    ];
    const rounds: Record<string, Measurement[]> = { [upperLabel]: [], [naiveLabel]: [], [mailroomLabel]: [] };
    let mailroomAccepted = 1; // the probe
    for (let round = 0; round < options.rounds; round++) {
      // A B C, then C B A: drift in the machine's load falls on every side alike.
      for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
        const { measurement, accepted } = await sendLoop(side.label, side.port, options.durationSec);
        if (side.label === mailroomLabel) mailroomAccepted += accepted;
        rounds[side.label].push(measurement);
        console.log(`  round ${round + 1}: ${side.label}: ${measurement.requestsPerSec} messages/s, p99 ${measurement.latencyP99Ms} ms`);
      }
    }
    const storedInbound = await count(databaseUrl, 'SELECT count(*) AS n FROM inbound_messages');
    const storedForwards = await count(databaseUrl, 'SELECT count(*) AS n FROM messages WHERE inbound_message_id IS NOT NULL');

    const measurements = [
      average(upperLabel, rounds[upperLabel]),
      { ...average(naiveLabel, rounds[naiveLabel]), baseline: upperLabel },
      { ...average(mailroomLabel, rounds[mailroomLabel]), baseline: naiveLabel },
    ];
    const [, naiveRate, mailroomRate] = measurements;
    const share = naiveRate.requestsPerSec > 0 ? mailroomRate.requestsPerSec / naiveRate.requestsPerSec : 0;
    const clean = measurements.every((m) => m.non2xx === 0 && m.errors === 0);
    return {
      scenario: 'inbound-forwarding',
      description: 'Inbound messages answered 250 per second (req/s = messages/s) against a bare smtp-server storing each with one INSERT',
      measurements,
      targets: [
        {
          name: `Mailroom inbound ≥ ${SHARE_TARGET * 100}% of the naive durable server`,
          met: share >= SHARE_TARGET && clean,
          detail: `${(share * 100).toFixed(1)}% (${mailroomRate.requestsPerSec} vs ${naiveRate.requestsPerSec} messages/s)${clean ? '' : '; some sends were refused or failed'}`,
        },
        {
          name: 'every message answered 250 is stored with the message forwarding it',
          met: storedInbound >= mailroomAccepted && storedForwards === storedInbound,
          detail: `${mailroomAccepted} answered 250, ${storedInbound} inbound_messages rows, ${storedForwards} forwarding messages`,
        },
      ],
    };
  } finally {
    await Promise.all(servers.map((server) => server.stop()));
    await emailQueue.close();
    await app.stop();
    await dropDatabase(databaseUrl);
  }
}
