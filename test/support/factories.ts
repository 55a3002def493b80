import type { TestApp } from './test-app';

export const bearer = (key: string) => ({ Authorization: `Bearer ${key}` });

/** A tenant account made through the API, with its first admin key. */
export async function createAccount(t: TestApp, name = 'Tenant'): Promise<{ accountId: string; adminKey: string }> {
  const res = await t.http.post('/admin/accounts').set(bearer(t.operatorKey)).send({ name }).expect(201);
  return { accountId: res.body.account.id, adminKey: res.body.apiKey.key };
}

/** A key made through the API; returns the secret and its id. */
export async function createKey(
  t: TestApp,
  adminKey: string,
  body: Record<string, unknown>,
): Promise<{ key: string; keyId: string }> {
  const res = await t.http.post('/api-keys').set(bearer(adminKey)).send({ name: 'test key', ...body });
  if (res.status !== 201) throw new Error(`key creation failed: ${res.status} ${JSON.stringify(res.body)}`);
  return { key: res.body.apiKey.key, keyId: res.body.apiKey.keyId };
}
