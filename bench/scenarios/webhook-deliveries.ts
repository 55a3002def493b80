import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Agent, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import Bull from 'bull';
import Redis from 'ioredis';
import { Webhook } from 'standardwebhooks';
import { dropDatabase, scratchDatabaseUrl, sql, startApp } from '../lib/app';
import { arrivalRate, postSignedEvent, waitUntil } from '../lib/arrivals';
import { createTenant } from '../lib/fixtures';
import type { BenchOptions, Measurement, ScenarioResult } from '../lib/types';

/**
 * Mailroom against the bare Bull worker: each delivery also writes its row, its new state and its attempt log in
 * PostgreSQL, on the same two cores; what that and the address checks may cost.
 */
const SHARE_TARGET = 1 / 3;
const CONCURRENCY = 50;
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';

interface Receiver {
  url: string;
  arrivals: number[];
  close(): Promise<void>;
}

/** A local receiver that answers 204 to everything and notes when each request arrived. */
async function startReceiver(): Promise<Receiver> {
  const arrivals: number[] = [];
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      arrivals.push(performance.now());
      res.writeHead(204).end();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    arrivals,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

function submissionPayload(n: number): Record<string, unknown> {
  return {
    type: 'form.submission',
    formId: 'frm_bench',
    formName: 'Contact',
    submissionId: `sub_bench${n}`,
    fields: {
      name: 'Ada Lovelace',
      email: 'ada@example.org',
      message: 'Hello, I would like to know more about your plans for small teams.',
    },
    files: [],
    messageIds: [`msg_bench${n}`],
    timestamp: new Date().toISOString(),
  };
}

/**
 * Webhook deliveries per second to a local receiver: `form.submission` events written to the outbox (as the
 * form pipeline does) are published, signed and POSTed by the worker (poll, delivery rows, one Bull job per
 * attempt, address check, Standard Webhooks signature, the attempt's log row). Two baselines with the same
 * concurrency and payloads: a plain loop signing and POSTing over keep-alive (the HTTP floor), and a bare Bull
 * worker process doing the same per job (the floor of any sender built on the design card's queue).
 */
export async function run(_options: BenchOptions): Promise<ScenarioResult> {
  const count = Number(process.env.BENCH_WEBHOOKS ?? 5000);
  const receiver = await startReceiver();
  const databaseUrl = scratchDatabaseUrl();
  let app: Awaited<ReturnType<typeof startApp>> | undefined;
  try {
    const loopRate = await plainLoop(receiver, count);
    console.log(`  plain signed POST loop: ${loopRate} requests/s`);
    const bareRate = await bareBull(receiver, count);
    console.log(`  bare Bull worker: ${bareRate} requests/s`);

    app = await startApp(databaseUrl, {
      APP_ROLE: 'all',
      RATE_LIMIT_ENABLED: 'false',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      WEBHOOK_POLL_INTERVAL_MS: '100',
      WEBHOOK_WORKER_CONCURRENCY: String(CONCURRENCY),
    });
    const tenant = await createTenant(app, { tier: 'enterprise' });
    const res = await fetch(`${app.url}/email/webhooks`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${tenant.adminKey}`, 'Content-Type': 'application/json' },
      // One endpoint gets CONCURRENCY requests at once, as the baselines do (4 unless its webhook says more).
      body: JSON.stringify({ url: receiver.url, events: ['form.submission'], maxConcurrency: CONCURRENCY }),
    });
    if (res.status !== 201) throw new Error(`POST /email/webhooks answered ${res.status}: ${await res.text()}`);

    const start = receiver.arrivals.length;
    const written = performance.now();
    await sql(
      databaseUrl,
      `INSERT INTO event_outbox (account_id, type, payload) SELECT $1, 'form.submission', $2::jsonb || jsonb_build_object('submissionId', 'sub_bench' || g) FROM generate_series(1, $3) g`,
      [tenant.accountId, JSON.stringify(submissionPayload(0)), count],
    );
    await waitUntil(() => receiver.arrivals.length - start >= count, 600_000);
    const mailroomRate = arrivalRate(receiver.arrivals, start, count);
    const endToEnd = (receiver.arrivals[start + count - 1] - written) / 1000;
    console.log(`  Mailroom outbox → webhooks: ${mailroomRate} deliveries/s (${count} in ${endToEnd.toFixed(2)} s from the outbox write)`);

    const row = (label: string, rate: number, baseline?: string): Measurement => ({
      label,
      ...(baseline ? { baseline } : {}),
      requestsPerSec: rate,
      latencyP50Ms: 0,
      latencyP99Ms: 0,
      non2xx: 0,
      errors: 0,
    });
    const loopLabel = `plain signed POST loop, ${count} requests, ${CONCURRENCY} at once`;
    const bareLabel = `bare Bull worker: signed POST per job, ${count} jobs, ${CONCURRENCY} at once`;
    const share = bareRate > 0 ? mailroomRate / bareRate : 0;
    return {
      scenario: 'webhook-deliveries',
      description:
        'Webhook deliveries per second from the outbox to a local receiver against a bare Bull worker and a plain signed POST loop (req/s = deliveries/s)',
      measurements: [
        row(loopLabel, loopRate),
        row(bareLabel, bareRate, loopLabel),
        row(`outbox → signed webhook deliveries, ${count} events, ${CONCURRENCY} at once`, mailroomRate, bareLabel),
      ],
      targets: [
        {
          name: `webhook deliveries ≥ a third of the bare Bull worker`,
          met: share >= SHARE_TARGET,
          detail: `${(share * 100).toFixed(1)}% (${mailroomRate} vs ${bareRate} deliveries/s; the plain loop: ${loopRate})`,
        },
      ],
    };
  } finally {
    await app?.stop();
    await dropDatabase(databaseUrl);
    await receiver.close();
  }
}

/** `count` jobs queued first, then drained by bench/lib/bare-bull-webhooks.ts in its own process. */
async function bareBull(receiver: Receiver, count: number): Promise<number> {
  const prefix = `mailroom-bench:bare-${randomBytes(4).toString('hex')}:bull`;
  const queue = new Bull('bare-webhooks', REDIS_URL, { prefix });
  try {
    for (let start = 0; start < count; start += 1000) {
      const jobs = Array.from({ length: Math.min(1000, count - start) }, (_, i) => ({
        data: { id: `evt_bare${start + i}`, payload: submissionPayload(start + i) },
      }));
      await queue.addBulk(jobs);
    }
  } finally {
    await queue.close();
  }
  const from = receiver.arrivals.length;
  const worker = spawn(process.execPath, ['-r', '@swc-node/register', join(__dirname, '..', 'lib', 'bare-bull-webhooks.ts')], {
    cwd: join(__dirname, '..', '..'),
    env: {
      PATH: process.env.PATH,
      BARE_COUNT: String(count),
      BARE_CONCURRENCY: String(CONCURRENCY),
      BARE_TARGET: receiver.url,
      BARE_SECRET: `whsec_${randomBytes(32).toString('base64')}`,
      BARE_REDIS_URL: REDIS_URL,
      BARE_PREFIX: prefix,
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  try {
    await waitUntil(() => receiver.arrivals.length - from >= count, 600_000);
  } finally {
    worker.kill();
    const redis = new Redis(REDIS_URL);
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.unlink(...keys);
    redis.disconnect();
  }
  return arrivalRate(receiver.arrivals, from, count);
}

/** Signs each payload as a webhook sender must and POSTs it, CONCURRENCY at a time over keep-alive. */
async function plainLoop(receiver: Receiver, count: number): Promise<number> {
  const webhook = new Webhook(`whsec_${randomBytes(32).toString('base64')}`);
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const target = new URL(receiver.url);
  const start = receiver.arrivals.length;
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < count) {
        const n = next++;
        await postSignedEvent(target, agent, webhook, `evt_bench${n}`, submissionPayload(n));
      }
    }),
  );
  agent.destroy();
  return arrivalRate(receiver.arrivals, start, count);
}
