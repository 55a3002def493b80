import { randomBytes } from 'node:crypto';
import { bearer } from './factories';
import type { TestApp } from './test-app';

/** A delivery as GET /email/webhooks/{id}/deliveries lists it. */
export interface Delivery {
  id: string;
  status: string;
  attempts: { attempt: number; statusCode: number | null; succeeded: boolean; error: string | null }[];
  payload: Record<string, unknown>;
}

/** The webhook calls the webhook e2e files make, each checking its status; `app` is read at each call (made in beforeAll). */
export function webhookApi(app: () => TestApp) {
  const register = async <T = { id: string; secret: string }>(key: string, body: Record<string, unknown>): Promise<T> => {
    const res = await app().http.post('/email/webhooks').set(bearer(key)).send(body);
    expect(res.status).toBe(201);
    return res.body as T;
  };
  /** Sends one message from the account's domain (its events go to the account's webhooks); its id. */
  const send = async (who: { adminKey: string; domain: string }): Promise<string> => {
    const subject = `hook ${randomBytes(4).toString('hex')}`;
    const res = await app()
      .http.post('/email/send')
      .set(bearer(who.adminKey))
      .send({ from: `hello@${who.domain}`, to: 'ada@example.org', subject, text: 'x' })
      .expect(200);
    return res.body.messageId as string;
  };
  const webhookOf = async (key: string, id: string) => (await app().http.get(`/email/webhooks/${id}`).set(bearer(key)).expect(200)).body;
  const deliveriesOf = async (key: string, id: string): Promise<Delivery[]> =>
    (await app().http.get(`/email/webhooks/${id}/deliveries`).set(bearer(key)).expect(200)).body.deliveries;
  return { register, send, webhookOf, deliveriesOf };
}
