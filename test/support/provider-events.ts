import { randomBytes } from 'node:crypto';
import type { Test } from 'supertest';
import type TestAgent from 'supertest/lib/agent';
import { Webhook } from 'standardwebhooks';

/** The signer of `POST /provider/events` under PROVIDER_WEBHOOK_SECRET (Standard Webhooks, the raw secret). */
export function providerSigner(secret: string): Webhook {
  return new Webhook(Buffer.from(secret, 'utf8'), { format: 'raw' });
}

/** `POST /provider/events` with `body` as JSON, signed by `signer` now under `id` (a fresh `evt_…` unless given). */
export function postProviderEvents(http: TestAgent, signer: Webhook, body: unknown, id = `evt_${randomBytes(6).toString('hex')}`): Test {
  const payload = JSON.stringify(body);
  const at = new Date();
  return http
    .post('/provider/events')
    .set({
      'Content-Type': 'application/json',
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': signer.sign(id, at, payload),
    })
    .send(payload);
}
