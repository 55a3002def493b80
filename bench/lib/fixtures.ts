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
