import { randomBytes } from 'node:crypto';
import { dropDatabase, scratchDatabaseUrl, startApp } from '../lib/app';
import type { BenchApp } from '../lib/app';
import { createUnlimitedTenant } from '../lib/fixtures';
import { average, measure, measureAtRate, ratioToBaseline } from '../lib/load';
import type { BenchOptions, Measurement, ScenarioResult } from '../lib/types';

// autocannon ships no types; this is the part of its API this scenario uses.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const autocannon = require('autocannon') as (options: Record<string, unknown>) => Promise<{
  requests: { average: number };
  latency: { p50: number; p99: number };
  statusCodeStats: Record<string, { count: number }>;
  errors: number;
  timeouts: number;
}>;

const SHARE_TARGET = 0.35;
const P99_TARGET_MS = 50;
/** An accepted browser post is answered 303 (to the form's redirect); every other answer is a failure. */
const ACCEPTED = 303;
const SITE = 'https://www.bench-site.test';
const FORM_HEADERS = {
  'Content-Type': 'application/x-www-form-urlencoded',
  Accept: 'text/html,application/xhtml+xml,*/*;q=0.8',
  Origin: SITE,
  'User-Agent': 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36',
};

/** A contact form's fields as a browser sends them, different in every post (the counter is in the message). */
function formBodies(): () => string {
  const run = randomBytes(4).toString('hex');
  let n = 0;
  return () =>
    new URLSearchParams({
      name: 'Bench Visitor',
      email: `visitor.${run}.${++n}@example.org`,
      message: `Hello, I would like to know more about your plans for small teams. Post ${run}-${n}.`,
      _service_honeypot: '',
    }).toString();
}

/**
 * Accepted form submissions: browser posts (url-encoded, an allowed Origin, no credential) to POST /f/{formId}
 * (origin check, the form's per-IP limit, parse, spam checks, compose the notification, commit the submission
 * and its message, queue the job, answer 303) against GET /auth/whoami (authenticated, does nothing) on the
 * same API-only app, alternately; then the form route at half its peak rate, open loop, for the p99.
 * Every post carries different field values. Only 303 answers count: non2xx counts the form route's other answers.
 */
export async function run(options: BenchOptions): Promise<ScenarioResult> {
  const databaseUrl = scratchDatabaseUrl();
  // The limiter on, as in production: a browser post pays its form's per-IP counter (set far above the load).
  const app = await startApp(databaseUrl, { RATE_LIMIT_ENABLED: 'true' });
  try {
    const { tenant, key } = await createUnlimitedTenant(app);
    const noopHeaders = { Authorization: `Bearer ${key}` };
    const formUrl = `${app.url}/f/${await createForm(app, tenant.adminKey)}`;
    const nextBody = formBodies();
    await probe(app, tenant.adminKey, formUrl, nextBody());

    const noop = 'GET /auth/whoami (no-op)';
    const post = 'POST /f/{formId} (browser post, 303)';
    const rounds: Record<string, Measurement[]> = { [noop]: [], [post]: [] };
    for (let round = 0; round < options.rounds; round++) {
      const a = await measure({ label: noop, url: `${app.url}/auth/whoami`, headers: noopHeaders, ...options });
      const b = await measureFormPosts(post, formUrl, nextBody, options);
      console.log(
        `  round ${round + 1}: whoami ${Math.round(a.requestsPerSec)} req/s, form posts ${Math.round(b.requestsPerSec)} accepted/s`,
      );
      rounds[noop].push(a);
      rounds[post].push(b);
    }
    const peak = average(post, rounds[post]);
    const halfRate = Math.max(1, Math.round(peak.requestsPerSec / 2));
    const atHalf = await measureAtRate({
      label: `${post} at ${halfRate}/s (half the peak)`,
      url: formUrl,
      headers: FORM_HEADERS,
      body: nextBody,
      rate: halfRate,
      durationSec: options.durationSec,
      success: (status) => status === ACCEPTED,
    });
    // The same steady load on the no-op route: what this machine's scheduling alone costs at that rate.
    const noopAtRate = await measureAtRate({
      label: `${noop} at ${halfRate}/s`,
      url: `${app.url}/auth/whoami`,
      headers: noopHeaders,
      rate: halfRate,
      durationSec: options.durationSec,
    });
    const measurements = [average(noop, rounds[noop]), { ...peak, baseline: noop }, atHalf, noopAtRate];
    const share = ratioToBaseline(measurements[1], measurements) ?? 0;
    const clean = measurements.slice(0, 2).every((m) => m.non2xx === 0 && m.errors === 0);
    return {
      scenario: 'form-submissions',
      description: 'Accepted browser form posts per second (303 answers only) against the no-op authenticated route',
      measurements,
      targets: [
        {
          name: `POST /f/{formId} ≥ ${SHARE_TARGET * 100}% of the no-op route`,
          met: share >= SHARE_TARGET && clean,
          detail: `${(share * 100).toFixed(1)}% (${Math.round(peak.requestsPerSec)} vs ${Math.round(measurements[0].requestsPerSec)} req/s)${clean ? '' : '; some answers were not the expected status, or failed'}`,
        },
        {
          name: `p99 ≤ ${P99_TARGET_MS} ms at half the peak rate`,
          met: atHalf.latencyP99Ms <= P99_TARGET_MS && atHalf.non2xx === 0 && atHalf.errors === 0,
          detail: `p99 ${atHalf.latencyP99Ms} ms at ${halfRate} req/s${atHalf.non2xx + atHalf.errors ? `; ${atHalf.non2xx} answers not ${ACCEPTED}, ${atHalf.errors} errors` : ''}`,
        },
      ],
    };
  } finally {
    await app.stop();
    await dropDatabase(databaseUrl);
  }
}

/** A stand-alone form that the bench site may post to, with its per-IP limit far above the load. */
async function createForm(app: BenchApp, adminKey: string): Promise<string> {
  const res = await fetch(`${app.url}/api/forms`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${adminKey}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({
      name: 'Bench contact form',
      to: 'owner@example.org',
      redirect: `${SITE}/thanks`,
      allowedOrigins: [SITE],
      rateLimit: 100_000_000,
    }),
  });
  const body = (await res.json()) as { id?: string };
  if (res.status !== 201 || !body.id) throw new Error(`POST /api/forms answered ${res.status}: ${JSON.stringify(body)}`);
  return body.id;
}

/** One post as the load will send it: 303 to the redirect, counted by the form's limiter, stored as accepted (not spam). */
async function probe(app: BenchApp, adminKey: string, formUrl: string, body: string): Promise<void> {
  const res = await fetch(formUrl, { method: 'POST', headers: FORM_HEADERS, body, redirect: 'manual' });
  const text = await res.text();
  if (res.status !== ACCEPTED) throw new Error(`POST ${formUrl} answered ${res.status}: ${text}`);
  if (res.headers.get('location') !== `${SITE}/thanks`) throw new Error(`the 303 went to ${res.headers.get('location')}`);
  if (res.headers.get('x-ratelimit-limit') !== '100000000')
    throw new Error(`the form's limiter did not count: X-RateLimit-Limit ${res.headers.get('x-ratelimit-limit')}`);
  const { submissionId } = JSON.parse(text) as { submissionId: string };
  const formId = new URL(formUrl).pathname.split('/').pop();
  const stored = await fetch(`${app.url}/api/forms/${formId}/submissions`, { headers: { Authorization: `Bearer ${adminKey}` } });
  const page = (await stored.json()) as { submissions: { id: string; status: string; spamReason: string | null }[] };
  const submission = page.submissions?.find((s) => s.id === submissionId);
  if (submission?.status !== 'accepted') throw new Error(`the probe's submission is ${JSON.stringify(submission)}, not accepted`);
}

/** Closed-loop peak (autocannon, as measure() does): a new body per request, only 303 answers counted as requests. */
async function measureFormPosts(label: string, url: string, nextBody: () => string, options: BenchOptions): Promise<Measurement> {
  const target = new URL(url);
  const base = {
    url: target.origin,
    connections: options.connections,
    requests: [
      { method: 'POST', path: target.pathname, headers: FORM_HEADERS, setupRequest: (req: object) => ({ ...req, body: nextBody() }) },
    ],
  };
  await autocannon({ ...base, duration: 2 });
  const result = await autocannon({ ...base, duration: options.durationSec });
  const counts = Object.entries(result.statusCodeStats).map(([status, { count }]) => [Number(status), Number(count)] as const);
  const total = counts.reduce((sum, [, count]) => sum + count, 0);
  const accepted = counts.find(([status]) => status === ACCEPTED)?.[1] ?? 0;
  const unexpected = counts.filter(([status]) => status !== ACCEPTED);
  if (unexpected.length) console.log(`  ${label}: answers other than ${ACCEPTED}: ${unexpected.map(([s, c]) => `${s}×${c}`).join(', ')}`);
  return {
    label,
    requestsPerSec: total > 0 ? (result.requests.average * accepted) / total : 0,
    latencyP50Ms: result.latency.p50,
    latencyP99Ms: result.latency.p99,
    non2xx: total - accepted,
    errors: result.errors + result.timeouts,
  };
}
