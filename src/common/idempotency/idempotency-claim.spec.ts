import { idempotencyClaimOf, IdempotentRequest } from './idempotency-claim';

const send: IdempotentRequest = { method: 'POST', path: '/v1/send', body: { subject: 'Hi' }, keyId: 'key_1', ip: '203.0.113.7' };

describe('idempotencyClaimOf (D-36)', () => {
  it('scopes a key to the API key that sent it, not to its account', () => {
    const first = idempotencyClaimOf(send, 'order-1042');
    const second = idempotencyClaimOf({ ...send, keyId: 'key_2' }, 'order-1042');
    expect(first.scope).toBe('key:key_1');
    expect(second.scope).toBe('key:key_2');
    expect(second.keyHash).toBe(first.keyHash);
  });

  it('scopes a call without a credential to its client IP, never to a key', () => {
    const anonymous = idempotencyClaimOf({ ...send, keyId: undefined }, 'order-1042');
    expect(anonymous.scope).toBe('ip:203.0.113.7');
  });

  it('names the route by method and path, so another route or another form is another record', () => {
    expect(idempotencyClaimOf(send, 'k').route).toBe('POST /v1/send');
    expect(idempotencyClaimOf({ ...send, path: '/f/frm_1' }, 'k').route).toBe('POST /f/frm_1');
    expect(idempotencyClaimOf({ ...send, path: '/f/frm_2' }, 'k').route).toBe('POST /f/frm_2');
  });

  it('tells another body under the same key by its request hash', () => {
    const first = idempotencyClaimOf(send, 'k');
    expect(idempotencyClaimOf(send, 'k').requestHash).toBe(first.requestHash);
    expect(idempotencyClaimOf({ ...send, body: { subject: 'Other' } }, 'k').requestHash).not.toBe(first.requestHash);
  });
});
