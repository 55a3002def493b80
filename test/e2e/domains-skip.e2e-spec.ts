import { bearer, createAccount } from '../support/factories';
import { createTestApp, TestApp } from '../support/test-app';

// DOMAIN_VERIFICATION=skip: local trials without DNS.
describe('domains with DOMAIN_VERIFICATION=skip', () => {
  // The warning at start is the process's, said once (src/config/startup-warnings.ts; test/e2e/startup.e2e-spec.ts).
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ env: { DOMAIN_VERIFICATION: 'skip' } });
  });
  afterAll(() => t.close());

  it('marks new domains verified without a DNS check, and still keeps a domain to one account', async () => {
    const { adminKey: first } = await createAccount(t, 'First');
    const { adminKey: second } = await createAccount(t, 'Second');
    const res = await t.http.post('/domains').set(bearer(first)).send({ domain: 'trial.test' }).expect(201);
    expect(res.body).toMatchObject({ domain: 'trial.test', status: 'verified', verificationDeadline: null });
    expect(res.body.verifiedAt).not.toBeNull();

    const taken = await t.http.post('/domains').set(bearer(second)).send({ domain: 'trial.test' }).expect(409);
    expect(taken.body.error.code).toBe('CONFLICT');
  });
});
