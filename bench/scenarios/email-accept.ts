import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { dropDatabase, scratchDatabaseUrl, sql, startApp } from '../lib/app';
import { createKey, createTenant } from '../lib/fixtures';
import { average, measure, measureAtRate, ratioToBaseline } from '../lib/load';
import type { BenchOptions, Measurement, ScenarioResult } from '../lib/types';

const SHARE_TARGET = 0.35;
const P99_TARGET_MS = 50;
export const BENCH_DOMAIN = 'bench.mailroom.test';

/** A verified sending domain written straight to the database (verification needs DNS). */
export async function insertVerifiedDomain(databaseUrl: string, accountId: string, sealedPrivateKey = 'unused-by-the-api'): Promise<void> {
  const publicKey = generateKeyPairSync('rsa', { modulusLength: 2048 })
    .publicKey.export({ type: 'spki', format: 'der' })
    .toString('base64');
  await sql(
    databaseUrl,
    `INSERT INTO domains (id, account_id, name, status, verification_token, dkim_selector, dkim_private_key, dkim_public_key, verified_at)
     VALUES ($1, $2, $3, 'verified', $4, 'mr1', $5, $6, now())`,
    [`dom_bench${randomBytes(8).toString('hex')}`, accountId, BENCH_DOMAIN, randomBytes(16).toString('hex'), sealedPrivateKey, publicKey],
  );
}

export const benchMessage = (to = 'reader@example.org') =>
  JSON.stringify({
    from: `Bench <hello@${BENCH_DOMAIN}>`,
    to,
    subject: 'Your weekly report',
    text: 'Hello,\n\nthis is the plain-text body of a typical transactional email.\n\nRegards',
    html: '<p>Hello,</p><p>this is the <b>HTML</b> body of a typical transactional email.</p><p>Regards</p>',
  });

/**
 * (a) Acceptance: POST /v1/send (validate, check the domain and the suppression list, compose the MIME,
 * commit the message, queue its job) against GET /auth/whoami (authenticated, does nothing) on the same
 * API-only app, alternately; then the send route again at half its peak rate for the p99.
 */
export async function run(options: BenchOptions): Promise<ScenarioResult> {
  const databaseUrl = scratchDatabaseUrl();
  const app = await startApp(databaseUrl, { RATE_LIMIT_ENABLED: 'false' });
  try {
    const tenant = await createTenant(app, { tier: 'enterprise' });
    const key = await createKey(app, tenant, { keyType: 'usage', permissions: ['email.send'] });
    await insertVerifiedDomain(databaseUrl, tenant.accountId);
    const headers = { 'X-Api-Key': key, 'Content-Type': 'application/json' };
    const probe = await fetch(`${app.url}/v1/send`, { method: 'POST', headers, body: benchMessage() });
    if (probe.status !== 200) throw new Error(`POST /v1/send answered ${probe.status}: ${await probe.text()}`);

    const noop = 'GET /auth/whoami (no-op)';
    const send = 'POST /v1/send';
    const rounds: Record<string, Measurement[]> = { [noop]: [], [send]: [] };
    for (let round = 0; round < options.rounds; round++) {
      const a = await measure({ label: noop, url: `${app.url}/auth/whoami`, headers, ...options });
      const b = await measure({ label: send, url: `${app.url}/v1/send`, method: 'POST', headers, body: benchMessage(), ...options });
      console.log(`  round ${round + 1}: whoami ${Math.round(a.requestsPerSec)} req/s, send ${Math.round(b.requestsPerSec)} req/s`);
      rounds[noop].push(a);
      rounds[send].push(b);
    }
    const peak = average(send, rounds[send]);
    const halfRate = Math.max(1, Math.round(peak.requestsPerSec / 2));
    const atHalf = await measureAtRate({
      label: `${send} at ${halfRate}/s (half the peak)`,
      url: `${app.url}/v1/send`,
      headers,
      body: benchMessage(),
      rate: halfRate,
      durationSec: options.durationSec,
    });
    // The same steady load on the no-op route: what this machine's scheduling alone costs at that rate.
    const noopAtRate = await measureAtRate({
      label: `${noop} at ${halfRate}/s`,
      url: `${app.url}/auth/whoami`,
      headers,
      rate: halfRate,
      durationSec: options.durationSec,
    });
    const measurements = [average(noop, rounds[noop]), { ...peak, baseline: noop }, atHalf, noopAtRate];
    const share = ratioToBaseline(measurements[1], measurements) ?? 0;
    const clean = measurements.slice(0, 2).every((m) => m.non2xx === 0 && m.errors === 0);
    return {
      scenario: 'email-accept',
      description: 'Accepted sends per second through POST /v1/send against the no-op authenticated route',
      measurements,
      targets: [
        {
          name: `POST /v1/send ≥ ${SHARE_TARGET * 100}% of the no-op route`,
          met: share >= SHARE_TARGET && clean,
          detail: `${(share * 100).toFixed(1)}% (${Math.round(peak.requestsPerSec)} vs ${Math.round(measurements[0].requestsPerSec)} req/s)${clean ? '' : '; some responses were not 2xx'}`,
        },
        {
          name: `p99 ≤ ${P99_TARGET_MS} ms at half the peak rate`,
          met: atHalf.latencyP99Ms <= P99_TARGET_MS && atHalf.non2xx === 0,
          detail: `p99 ${atHalf.latencyP99Ms} ms at ${halfRate} req/s`,
        },
      ],
    };
  } finally {
    await app.stop();
    await dropDatabase(databaseUrl);
  }
}
