import { dropDatabase, scratchDatabaseUrl, startApp } from '../lib/app';
import { createUnlimitedTenant } from '../lib/fixtures';
import { average, measure, ratioToBaseline } from '../lib/load';
import type { BenchOptions, Measurement, ScenarioResult } from '../lib/types';

const TARGET = 0.85;

/**
 * The limiter's cost: GET /auth/whoami (authenticated, does nothing) with the limiter off and on, the two
 * apps measured alternately in the same run. Limits are set far above the load so the limiter does its
 * whole work (five counters: the key's hour and minute, the account's hour, minute and burst) and never
 * answers 429.
 */
export async function run(options: BenchOptions): Promise<ScenarioResult> {
  const databaseUrl = scratchDatabaseUrl();
  const off = await startApp(databaseUrl, { RATE_LIMIT_ENABLED: 'false' });
  const on = await startApp(databaseUrl, { RATE_LIMIT_ENABLED: 'true', MIGRATIONS_RUN: 'false' });
  try {
    const { key } = await createUnlimitedTenant(off);
    const headers = { Authorization: `Bearer ${key}` };
    // Measure what the labels say: only the "on" app counts (and says so in its headers).
    const limited = await Promise.all(
      [off, on].map(async (app) => (await fetch(`${app.url}/auth/whoami`, { headers })).headers.has('x-ratelimit-limit')),
    );
    if (limited[0] || !limited[1]) throw new Error(`limiter headers off/on: ${limited.join('/')}; expected false/true`);
    const rounds: Record<'off' | 'on', Measurement[]> = { off: [], on: [] };
    for (let round = 0; round < options.rounds; round++) {
      for (const [name, app] of [
        ['off', off],
        ['on', on],
      ] as const) {
        const m = await measure({ label: name, url: `${app.url}/auth/whoami`, headers, ...options });
        console.log(`  round ${round + 1}, limiter ${name}: ${Math.round(m.requestsPerSec)} req/s`);
        rounds[name].push(m);
      }
    }
    const measurements = [
      average('GET /auth/whoami, limiter off', rounds.off),
      { ...average('GET /auth/whoami, limiter on', rounds.on), baseline: 'GET /auth/whoami, limiter off' },
    ];
    const ratio = ratioToBaseline(measurements[1], measurements) ?? 0;
    const clean = measurements.every((m) => m.non2xx === 0 && m.errors === 0);
    return {
      scenario: 'rate-limit',
      description: 'Throughput of an authenticated no-op route with the limiter off and on',
      measurements,
      targets: [
        {
          name: 'the limiter costs ≤ 15% of throughput',
          met: ratio >= TARGET && clean,
          detail: `limiter on = ${(ratio * 100).toFixed(1)}% of off${clean ? '' : '; some responses were not 2xx'}`,
        },
      ],
    };
  } finally {
    await Promise.all([off.stop(), on.stop()]);
    await dropDatabase(databaseUrl);
  }
}
