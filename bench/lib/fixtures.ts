import { generateKeyPairSync, randomBytes } from 'node:crypto';
import type { BenchApp } from './app';
import { sql } from './app';

export interface Tenant {
  accountId: string;
  adminKey: string;
}

async function call(app: BenchApp, key: string, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(`${app.url}${path}`, {
    method,
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await res.json();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** A tenant account made by the operator, with `settings` written straight to its row when given. */
export async function createTenant(
  app: BenchApp,
  options: { tier?: 'free' | 'pro' | 'enterprise'; settings?: Record<string, unknown> } = {},
): Promise<Tenant> {
  const created = await call(app, app.operatorKey, 'POST', '/admin/accounts', { name: 'Bench tenant', tier: options.tier });
  if (options.settings)
    await sql(app.databaseUrl, 'UPDATE accounts SET settings = $2 WHERE id = $1', [created.account.id, options.settings]);
  return { accountId: created.account.id, adminKey: created.apiKey.key };
}

/** A key made through POST /api-keys by the tenant's admin key; returns the secret. */
export async function createKey(app: BenchApp, tenant: Tenant, body: Record<string, unknown>): Promise<string> {
  const created = await call(app, tenant.adminKey, 'POST', '/api-keys', { name: 'Bench key', ...body });
  return created.apiKey.key;
}

/**
 * A tenant and a usage key whose rate limits sit far above any bench load, for measurements with the limiter on
 * (it does all its work and never answers 429). `keyBody` adds to the key (permissions, say).
 */
export async function createUnlimitedTenant(
  app: BenchApp,
  keyBody: Record<string, unknown> = {},
): Promise<{ tenant: Tenant; key: string }> {
  const tenant = await createTenant(app, {
    tier: 'enterprise',
    settings: { limits: { requests_per_hour: 1_000_000_000, requests_per_minute: 100_000_000, burst: 10_000_000 } },
  });
  // The tenant's first admin key has no hourly limit of its own, so it may make a key of any limit.
  const key = await createKey(app, tenant, {
    keyType: 'usage',
    rateLimit: 100_000_000,
    restrictions: { burst_limit: 10_000_000 },
    ...keyBody,
  });
  return { tenant, key };
}

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

/** The message the email scenarios send, as a POST /v1/send body: a typical transactional email. */
export const benchMessage = (to = 'reader@example.org') =>
  JSON.stringify({
    from: `Bench <hello@${BENCH_DOMAIN}>`,
    to,
    subject: 'Your weekly report',
    text: 'Hello,\n\nthis is the plain-text body of a typical transactional email.\n\nRegards',
    html: '<p>Hello,</p><p>this is the <b>HTML</b> body of a typical transactional email.</p><p>Regards</p>',
  });
