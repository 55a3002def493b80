import { readFileSync } from 'node:fs';
import Bull from 'bull';
import { Client } from 'pg';
import { dropDatabase, scratchDatabaseUrl, startApp } from '../lib/app';
import type { BenchApp } from '../lib/app';
import { BENCH_DOMAIN, createTenant, insertVerifiedDomain } from '../lib/fixtures';
import type { BenchOptions, Measurement, ScenarioResult } from '../lib/types';

const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const SMALL = 1_000;
const LARGE = Number(process.env.BENCH_LIST_SIZE ?? 10_000);
/** The large fan-out may use at most this much more memory at its peak than the small one did. */
const RSS_GROWTH_TARGET_MB = 32;
/**
 * The app's heap is capped as a container would be: under a high allocation rate V8 grows an uncapped heap long
 * before it collects, so its RSS would show GC policy (growing with the list while nothing is retained), not
 * what the fan-out keeps.
 */
const HEAP_MB = 256;
const RATE_SHARE_TARGET = 0.5;
const BATCH_SIZE = 500;

interface FanOut {
  seconds: number;
  messagesPerSec: number;
  /** Peak resident memory of the app during the fan-out, and its growth over the moment before the request. */
  peakRssMb: number;
  rssGrowthMb: number;
}

/**
 * A list send (`POST /email/send` with `list`): time from the request to the last message committed and queued,
 * and the app's peak RSS meanwhile, for a list of 1,000 and one of 10,000 subscribers (same process, one after
 * the other), with the app's heap capped at HEAP_MB. Baseline: the same 10,000 messages sent by a client through
 * `POST /email/batch`, 500 a call. The email queue is paused, so delivery does not compete with the fan-out
 * (req/s = messages/s).
 */
export async function run(_options: BenchOptions): Promise<ScenarioResult> {
  const databaseUrl = scratchDatabaseUrl();
  const app = await startApp(
    databaseUrl,
    { APP_ROLE: 'all', RATE_LIMIT_ENABLED: 'false' },
    { nodeArgs: [`--max-old-space-size=${HEAP_MB}`] },
  );
  const emailQueue = new Bull('email', REDIS_URL, { prefix: `${app.redisPrefix}bull` });
  try {
    await emailQueue.pause();
    const tenant = await createTenant(app, { tier: 'enterprise' });
    await insertVerifiedDomain(databaseUrl, tenant.accountId);
    const api = client(app, tenant.adminKey);
    await api('POST', '/email/templates', {
      name: 'newsletter',
      subject: 'News for {{name}}',
      html: '<p>Hello {{name}},</p><p>Here is what is new this week.</p><p><a href="{{unsubscribeUrl}}">Unsubscribe</a></p>',
      text: 'Hello {{name}},\n\nHere is what is new this week.\n\nUnsubscribe: {{unsubscribeUrl}}',
    });

    const small = await fanOut(app, api, SMALL);
    console.log(
      `  ${SMALL} subscribers: ${small.seconds.toFixed(2)} s, ${small.messagesPerSec} messages/s, RSS peak ${small.peakRssMb} MB (+${small.rssGrowthMb})`,
    );
    const large = await fanOut(app, api, LARGE);
    console.log(
      `  ${LARGE} subscribers: ${large.seconds.toFixed(2)} s, ${large.messagesPerSec} messages/s, RSS peak ${large.peakRssMb} MB (+${large.rssGrowthMb})`,
    );
    const batchRate = await batchSends(api, LARGE);
    console.log(`  ${LARGE} messages through POST /email/batch (${BATCH_SIZE} a call): ${batchRate} messages/s`);

    const batchLabel = `POST /email/batch, ${LARGE} messages, ${BATCH_SIZE} a call`;
    const row = (label: string, rate: number, baseline?: string): Measurement => ({
      label,
      ...(baseline ? { baseline } : {}),
      requestsPerSec: rate,
      latencyP50Ms: 0,
      latencyP99Ms: 0,
      non2xx: 0,
      errors: 0,
    });
    const share = batchRate > 0 ? large.messagesPerSec / batchRate : 0;
    const growth = large.peakRssMb - small.peakRssMb;
    return {
      scenario: 'list-send',
      description: `List send fan-out: messages per second from the request to the last message queued, and peak RSS with a ${HEAP_MB} MB heap (req/s = messages/s)`,
      measurements: [
        row(batchLabel, batchRate),
        row(
          `list send, ${SMALL} subscribers: ${small.seconds.toFixed(2)} s, peak RSS ${small.peakRssMb} MB`,
          small.messagesPerSec,
          batchLabel,
        ),
        row(
          `list send, ${LARGE} subscribers: ${large.seconds.toFixed(2)} s, peak RSS ${large.peakRssMb} MB`,
          large.messagesPerSec,
          batchLabel,
        ),
      ],
      targets: [
        {
          name: `peak RSS of the ${LARGE}-subscriber fan-out ≤ the ${SMALL}-subscriber one + ${RSS_GROWTH_TARGET_MB} MB`,
          met: growth <= RSS_GROWTH_TARGET_MB,
          detail: `${large.peakRssMb} MB vs ${small.peakRssMb} MB (${growth >= 0 ? '+' : ''}${growth} MB)`,
        },
        {
          name: `list fan-out ≥ ${RATE_SHARE_TARGET * 100}% of the batch API's rate`,
          met: share >= RATE_SHARE_TARGET,
          detail: `${(share * 100).toFixed(1)}% (${large.messagesPerSec} vs ${batchRate} messages/s)`,
        },
      ],
    };
  } finally {
    await emailQueue.close();
    await app.stop();
    await dropDatabase(databaseUrl);
  }
}

type Api = (method: string, path: string, body?: unknown) => Promise<any>;

function client(app: BenchApp, key: string): Api {
  return async (method, path, body) => {
    const res = await fetch(`${app.url}${path}`, {
      method,
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = await res.json();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
    return json;
  };
}

/** A new list of `size` subscribers (added through the API, 1,000 a call), sent to; timed until its send is done. */
async function fanOut(app: BenchApp, api: Api, size: number): Promise<FanOut> {
  const list = await api('POST', '/email/lists', { name: `Bench list of ${size}` });
  for (let start = 0; start < size; start += 1000) {
    const subscribers = Array.from({ length: Math.min(1000, size - start) }, (_, i) => ({
      email: `reader${start + i}@example.org`,
      name: `Reader ${start + i}`,
    }));
    const added = await api('POST', `/email/lists/${list.id}/subscribers`, subscribers);
    if (added.added !== subscribers.length) throw new Error(`added ${added.added} of ${subscribers.length} subscribers`);
  }

  const before = rssMb(app.pid);
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, rssMb(app.pid))), 20);
  const started = performance.now();
  try {
    const accepted = await api('POST', '/email/send', { from: `News <news@${BENCH_DOMAIN}>`, list: list.id, template: 'newsletter' });
    if (accepted.queued !== size) throw new Error(`the list send answered queued ${accepted.queued}, not ${size}`);
    for (;;) {
      const send = await api('GET', `/email/lists/${list.id}/sends/${accepted.listSendId}`);
      if (send.status === 'done') break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const seconds = (performance.now() - started) / 1000;
    const made = await countMessages(app.databaseUrl, list.id);
    if (made !== size) throw new Error(`the list send made ${made} messages, not ${size}`);
    return { seconds, messagesPerSec: Math.round(size / seconds), peakRssMb: peak, rssGrowthMb: peak - before };
  } finally {
    clearInterval(sampler);
  }
}

/** Messages per second a client gets by sending the same messages itself through POST /email/batch, one call after another. */
async function batchSends(api: Api, total: number): Promise<number> {
  const started = performance.now();
  for (let start = 0; start < total; start += BATCH_SIZE) {
    const recipients = Array.from({ length: Math.min(BATCH_SIZE, total - start) }, (_, i) => ({
      email: `client${start + i}@example.org`,
      name: `Client ${start + i}`,
      variables: { name: `Client ${start + i}` },
    }));
    const answer = await api('POST', '/email/batch', { from: `News <news@${BENCH_DOMAIN}>`, template: 'newsletter', recipients });
    if (answer.data.length !== recipients.length) throw new Error(`the batch answered ${answer.data.length} messages`);
  }
  return Math.round(total / ((performance.now() - started) / 1000));
}

function rssMb(pid: number): number {
  const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
  return Math.round(kb / 1024);
}

async function countMessages(databaseUrl: string, listId: string): Promise<number> {
  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const { rows } = await db.query('SELECT count(*)::int AS n FROM messages WHERE list_id = $1', [listId]);
    return rows[0].n;
  } finally {
    await db.end();
  }
}
