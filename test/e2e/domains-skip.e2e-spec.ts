import { Logger } from '@nestjs/common';
import { bearer, createAccount } from '../support/factories';
import { createTestApp, TestApp } from '../support/test-app';

// DOMAIN_VERIFICATION=skip: local trials without DNS.
describe('domains with DOMAIN_VERIFICATION=skip', () => {
  let t: TestApp;
  let warn: jest.SpyInstance;

  beforeAll(async () => {
    warn = jest.spyOn(Logger.prototype, 'warn');
    t = await createTestApp({ env: { DOMAIN_VERIFICATION: 'skip' } });
  });
  afterAll(async () => {
    warn.mockRestore();
    await t.close();
  });

  it('warns at start', () => {
    expect(warn).toHaveBeenCalledWith(expect.stringMatching(/^DOMAIN_VERIFICATION=skip: new domains are marked verified/));
  });

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
