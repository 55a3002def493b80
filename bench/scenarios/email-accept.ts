import { dropDatabase, scratchDatabaseUrl, startApp } from '../lib/app';
import type { BenchApp } from '../lib/app';
import { benchMessage, createUnlimitedTenant, insertVerifiedDomain } from '../lib/fixtures';
import { average, measure, measureAtRate, ratioToBaseline } from '../lib/load';
import type { LoadOptions } from '../lib/load';
import type { BenchOptions, Measurement, ScenarioResult } from '../lib/types';

const SEND_SHARE_TARGET = 0.5;
const NOOP_SHARE_TARGET = 0.75;
const P99_TARGET_MS = 50;
/** prom-client's eventLoopMonitoringPrecision, which Mailroom leaves at its default. */
const EVENT_LOOP_SAMPLING_MS = 10;

/**
 * (a) Acceptance: POST /v1/send (validate, check the domain and the suppression list, commit the message, queue
 * its job) against GET /auth/whoami (authenticated, does nothing), and that against GET /health (no auth: the
 * framework's floor), on the same API-only app, measured alternately (A B C, then C B A); then the send route at
 * half its peak rate, open loop, for the p99, with the app's event-loop delay meanwhile. The limiter is on, as in
 * production: the no-op's cost includes the guard, the key cache and the limiter's Redis call. The tenant's and
 * the key's limits are lifted far above the load, so nothing answers 429.
 */
export async function run(options: BenchOptions): Promise<ScenarioResult> {
  const databaseUrl = scratchDatabaseUrl();
  const app = await startApp(databaseUrl, { RATE_LIMIT_ENABLED: 'true' });
  try {
    const { tenant, key } = await createUnlimitedTenant(app, { permissions: ['email.send'] });
    await insertVerifiedDomain(databaseUrl, tenant.accountId);
    const headers = { 'X-Api-Key': key, 'Content-Type': 'application/json' };
    await probe(app, headers);

    const floor = 'GET /health (no auth)';
    const noop = 'GET /auth/whoami (no-op)';
    const send = 'POST /v1/send';
    const routes: Record<string, Pick<LoadOptions, 'url' | 'method' | 'headers' | 'body'>> = {
      [floor]: { url: `${app.url}/health` },
      [noop]: { url: `${app.url}/auth/whoami`, headers },
      [send]: { url: `${app.url}/v1/send`, method: 'POST', headers, body: benchMessage() },
    };
    const rounds: Record<string, Measurement[]> = { [floor]: [], [noop]: [], [send]: [] };
    for (let round = 0; round < options.rounds; round++) {
      const order = round % 2 === 0 ? [floor, noop, send] : [send, noop, floor];
      for (const label of order) rounds[label].push(await measure({ label, ...routes[label], ...options }));
      const rate = (label: string) => Math.round(rounds[label][round].requestsPerSec);
      console.log(`  round ${round + 1}: health ${rate(floor)} req/s, whoami ${rate(noop)} req/s, send ${rate(send)} req/s`);
    }
    const peak = average(send, rounds[send]);
    const halfRate = Math.max(1, Math.round(peak.requestsPerSec / 2));
    const atHalf = await measureAtRate({
      label: `${send} at ${halfRate}/s (half the peak), open loop`,
      url: `${app.url}/v1/send`,
      headers,
      body: benchMessage(),
      rate: halfRate,
      durationSec: options.durationSec,
      // Reading the histogram resets it: what the next reading gives is the recorded run's.
      afterWarmup: () => eventLoopDelay(app).then(() => undefined),
    });
    const delay = await eventLoopDelay(app);
    atHalf.label += `; the app's event loop delayed p99 ${delay.p99Ms} ms, max ${delay.maxMs} ms`;
    // The same steady load on the no-op route: what this machine's scheduling alone costs at that rate.
    const noopAtRate = await measureAtRate({
      label: `${noop} at ${halfRate}/s, open loop`,
      url: `${app.url}/auth/whoami`,
      headers,
      rate: halfRate,
      durationSec: options.durationSec,
    });

    const measurements = [
      average(floor, rounds[floor]),
      { ...average(noop, rounds[noop]), baseline: floor },
      { ...peak, baseline: noop },
      atHalf,
      noopAtRate,
    ];
    const [floorPeak, noopPeak] = measurements;
    const sendShare = ratioToBaseline(measurements[2], measurements) ?? 0;
    const noopShare = ratioToBaseline(measurements[1], measurements) ?? 0;
    const unclean = measurements.filter((m) => m.non2xx > 0 || m.errors > 0);
    return {
      scenario: 'email-accept',
      description: 'Accepted sends per second through POST /v1/send against the no-op authenticated route, and that against GET /health',
      measurements,
      targets: [
        {
          name: `POST /v1/send ≥ ${SEND_SHARE_TARGET * 100}% of the no-op route`,
          met: sendShare >= SEND_SHARE_TARGET,
          detail: `${(sendShare * 100).toFixed(1)}% (${peak.requestsPerSec} vs ${noopPeak.requestsPerSec} req/s)`,
        },
        {
          name: `GET /auth/whoami ≥ ${NOOP_SHARE_TARGET * 100}% of GET /health`,
          met: noopShare >= NOOP_SHARE_TARGET,
          detail: `${(noopShare * 100).toFixed(1)}% (${noopPeak.requestsPerSec} vs ${floorPeak.requestsPerSec} req/s)`,
        },
        {
          name: `p99 ≤ ${P99_TARGET_MS} ms at half the send peak, open loop`,
          met: atHalf.latencyP99Ms <= P99_TARGET_MS,
          detail: `p99 ${atHalf.latencyP99Ms} ms at ${halfRate} req/s`,
        },
        {
          name: 'every answer 2xx, no error',
          met: unclean.length === 0,
          detail: unclean.length
            ? unclean.map((m) => `${m.label}: ${m.non2xx} non-2xx, ${m.errors} errors`).join('; ')
            : `${measurements.length} measurements`,
        },
      ],
    };
  } finally {
    await app.stop();
    await dropDatabase(databaseUrl);
  }
}

/** One request to each route as the load sends it: 2xx, and the limiter counts the authenticated ones. */
async function probe(app: BenchApp, headers: Record<string, string>): Promise<void> {
  const health = await fetch(`${app.url}/health`);
  if (health.status !== 200) throw new Error(`GET /health answered ${health.status}`);
  for (const [path, init] of [
    ['/auth/whoami', { headers }],
    ['/v1/send', { method: 'POST', headers, body: benchMessage() }],
  ] as const) {
    const res = await fetch(`${app.url}${path}`, init);
    if (res.status !== 200) throw new Error(`${path} answered ${res.status}: ${await res.text()}`);
    if (res.headers.get('x-ratelimit-limit') === null) throw new Error(`the limiter did not count ${path}`);
  }
}

/**
 * The app's event-loop delay since the last reading, from prom-client's default metrics on /metrics (reading them
 * resets the histogram). Its timer fires every 10 ms and records each whole interval: an idle loop reads 10 ms,
 * so the interval is taken off.
 */
async function eventLoopDelay(app: BenchApp): Promise<{ p99Ms: number; maxMs: number }> {
  const res = await fetch(`${app.url}/metrics`, {
    headers: { Authorization: `Basic ${Buffer.from(`bench:${app.operatorKey}`).toString('base64')}` },
  });
  if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}`);
  const text = await res.text();
  const ms = (name: string) => {
    const seconds = Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
    return Math.max(0, Math.round((seconds * 1000 - EVENT_LOOP_SAMPLING_MS) * 10) / 10);
  };
  return { p99Ms: ms('nodejs_eventloop_lag_p99_seconds'), maxMs: ms('nodejs_eventloop_lag_max_seconds') };
}
