import { AccountsService } from '../../src/operator/accounts.service';
import type { TestApp } from './test-app';

export const bearer = (key: string) => ({ Authorization: `Bearer ${key}` });

/** A tenant account with its first admin key (made by the service: /admin/* is rate-limited to 5 a minute). */
export async function createAccount(t: TestApp, name = 'Tenant'): Promise<{ accountId: string; adminKey: string }> {
  const { account, secret } = await t.app.get(AccountsService).create(name);
  return { accountId: account.id, adminKey: secret };
}

/** A key made through the API; returns the secret and its id. */
export async function createKey(t: TestApp, adminKey: string, body: Record<string, unknown>): Promise<{ key: string; keyId: string }> {
  const res = await t.http
    .post('/api-keys')
    .set(bearer(adminKey))
    .send({ name: 'test key', ...body });
  if (res.status !== 201) throw new Error(`key creation failed: ${res.status} ${JSON.stringify(res.body)}`);
  return { key: res.body.apiKey.key, keyId: res.body.apiKey.keyId };
}
