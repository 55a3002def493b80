import { readFileSync } from 'node:fs';
import Redis from 'ioredis';
import { Client } from 'pg';
import { dropDatabase, scratchDatabaseUrl, startApp } from '../lib/app';
import { benchMessage, createKey, createTenant, insertVerifiedDomain } from '../lib/fixtures';
import { average, measure, ratioToBaseline } from '../lib/load';
import type { BenchOptions, Measurement, ScenarioResult } from '../lib/types';

const TARGET = 0.9;
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
/** Linux's USER_HZ: /proc/<pid>/stat counts CPU time in these. */
const CLOCK_TICKS_PER_SEC = 100;

/** CPU time (user + system) the process has used, in ms. */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_SEC;
}

/**
 * What the quota check costs a send: POST /email/send with QUOTAS_ENABLED=false and =true, two API-only apps
 * on one database, measured alternately. The tenant is enterprise with an emails_per_month quota and all three
 * global_limits, far above the load, so every send checks and adds four counters (emails this month; units
 * this hour, day and month) in one Lua call and never answers 429.
 */
export async function run(options: BenchOptions): Promise<ScenarioResult> {
  const databaseUrl = scratchDatabaseUrl();
  const off = await startApp(databaseUrl, { RATE_LIMIT_ENABLED: 'false', QUOTAS_ENABLED: 'false' });
  const on = await startApp(databaseUrl, { RATE_LIMIT_ENABLED: 'false', QUOTAS_ENABLED: 'true', MIGRATIONS_RUN: 'false' });
  const redis = new Redis(REDIS_URL);
  try {
    const tenant = await createTenant(off, {
      tier: 'enterprise',
      settings: {
        quotas: { emails_per_month: 100_000_000 },
        global_limits: { hourly: 1_000_000_000, daily: 1_000_000_000, monthly: 1_000_000_000 },
      },
    });
    const key = await createKey(off, tenant, { keyType: 'usage', permissions: ['email.send'] });
    await insertVerifiedDomain(databaseUrl, tenant.accountId);
    const headers = { 'X-Api-Key': key, 'Content-Type': 'application/json' };

    // Measure what the labels say: only the "on" app counts, four counters per send.
    for (const app of [off, on]) {
      const probe = await fetch(`${app.url}/email/send`, { method: 'POST', headers, body: benchMessage() });
      if (probe.status !== 200) throw new Error(`POST /email/send answered ${probe.status}: ${await probe.text()}`);
    }
    const counters = await Promise.all(
      [off, on].map(async (app) => (await redis.keys(`${app.redisPrefix}quota:${tenant.accountId}:*`)).length),
    );
    if (counters[0] !== 0 || counters[1] !== 4) throw new Error(`quota counters off/on: ${counters.join('/')}; expected 0/4`);

    const labels = { off: 'POST /email/send, quotas off', on: 'POST /email/send, quotas on' } as const;
    const rounds: Record<'off' | 'on', Measurement[]> = { off: [], on: [] };
    // The app's CPU per accepted send, warm-up included: steadier than req/s when other work shares the machine.
    const cpu = { off: { ms: 0, sends: 0 }, on: { ms: 0, sends: 0 } };
    const db = new Client({ connectionString: databaseUrl });
    await db.connect();
    const sent = async () => Number((await db.query('SELECT count(*) AS n FROM messages')).rows[0].n);
    // Each round measures off, on, on, off for half the duration each: a drift of the machine's load during the
    // round (other work starting, autovacuum of the inserts just made) falls on both sides alike.
    const durationSec = Math.max(5, Math.round(options.durationSec / 2));
    // Uncounted: both apps compile their hot paths first (a cold app's first measurement ran 30–40% slower).
    for (const app of [off, on])
      await measure({
        label: 'warm-up',
        url: `${app.url}/email/send`,
        method: 'POST',
        headers,
        body: benchMessage(),
        ...options,
        durationSec: 5,
      });
    for (let round = 0; round < options.rounds; round++) {
      for (const [name, app] of [
        ['off', off],
        ['on', on],
        ['on', on],
        ['off', off],
      ] as const) {
        const [cpuBefore, sentBefore] = [cpuMs(app.pid), await sent()];
        const m = await measure({
          label: labels[name],
          url: `${app.url}/email/send`,
          method: 'POST',
          headers,
          body: benchMessage(),
          ...options,
          durationSec,
        });
        const [cpuUsed, sends] = [cpuMs(app.pid) - cpuBefore, (await sent()) - sentBefore];
        cpu[name].ms += cpuUsed;
        cpu[name].sends += sends;
        console.log(
          `  round ${round + 1}, quotas ${name}: ${Math.round(m.requestsPerSec)} req/s, ${(cpuUsed / sends).toFixed(3)} ms CPU per send`,
        );
        rounds[name].push(m);
      }
    }
    await db.end();
    const perSend = (side: 'off' | 'on') => cpu[side].ms / cpu[side].sends;
    const cpuShare = perSend('off') / perSend('on');
    const measurements = [average(labels.off, rounds.off), { ...average(labels.on, rounds.on), baseline: labels.off }];
    const ratio = ratioToBaseline(measurements[1], measurements) ?? 0;
    const clean = measurements.every((m) => m.non2xx === 0 && m.errors === 0);
    return {
      scenario: 'quotas',
      description: 'Accepted sends per second through POST /email/send with the quota check off and on',
      measurements,
      targets: [
        {
          name: `quotas on ≥ ${TARGET * 100}% of off`,
          met: ratio >= TARGET && clean,
          detail:
            `quotas on = ${(ratio * 100).toFixed(1)}% of off (${Math.round(measurements[1].requestsPerSec)} vs ${Math.round(measurements[0].requestsPerSec)} req/s)` +
            `${clean ? '' : '; some responses were not 2xx'}; app CPU per send ${perSend('on').toFixed(3)} vs ${perSend('off').toFixed(3)} ms ` +
            `(sends per CPU second: on = ${(cpuShare * 100).toFixed(1)}% of off)`,
        },
      ],
    };
  } finally {
    redis.disconnect();
    await Promise.all([off.stop(), on.stop()]);
    await dropDatabase(databaseUrl);
  }
}
