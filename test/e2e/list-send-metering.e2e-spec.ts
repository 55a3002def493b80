import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { ListSendsService } from '../../src/email/list-sends/list-sends.service';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount } from '../support/factories';
import { SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';
import { waitFor } from '../support/wait-for';

interface Tenant {
  accountId: string;
  adminKey: string;
  domain: string;
}

interface ListSendStatus {
  status: string;
  queued: number;
  suppressed: number;
  failed: number;
  refused: number;
  stoppedReason: string | null;
  completedAt: string | null;
}

/**
 * A list send counts the emails it makes, whatever happens to its list between its acceptance and its
 * fan-out, and a cancelled scheduled email is given back. The API instance runs no worker: each test holds
 * the fan-out, changes the list, then runs it (ListSendsService.fanOut, as the list-sends worker does).
 */
describe('list send metering', () => {
  let api: TestApp;
  let sink: SmtpSink;
  const unique = () => randomBytes(4).toString('hex');
  const dayAhead = () => new Date(Date.now() + 86_400_000).toISOString();

  beforeAll(async () => {
    sink = await startSmtpSink();
    api = await createTestApp({ env: { APP_ROLE: 'api', QUOTAS_ENABLED: 'true', LIST_SEND_BATCH_SIZE: '50' } });
  });

  afterAll(async () => {
    await api.close();
    await sink.close();
  });

  const db = () => api.app.get(DataSource);
  const fanOut = (listSendId: string, stopping = () => false) => api.app.get(ListSendsService).fanOut(listSendId, stopping);

  /** An account with a verified domain; tier and quotas set by the operator. */
  async function tenant(changes: Record<string, unknown>): Promise<Tenant> {
    const { accountId, adminKey } = await createAccount(api, `Metering ${unique()}`);
    const domain = `m${unique()}.metering.test`;
    await createVerifiedDomain(api, accountId, domain);
    await api.http.patch(`/admin/accounts/${accountId}`).set(bearer(api.operatorKey)).send(changes).expect(200);
    return { accountId, adminKey, domain };
  }

  const addresses = (n: number, prefix = unique()) =>
    Array.from({ length: n }, (_, i) => `${prefix}${String(i).padStart(4, '0')}@example.org`);

  async function createList(who: Tenant, emails: string[]): Promise<string> {
    const listId: string = (
      await api.http
        .post('/email/lists')
        .set(bearer(who.adminKey))
        .send({ name: `list ${unique()}` })
        .expect(201)
    ).body.id;
    await addSubscribers(who, listId, emails);
    return listId;
  }

  const addSubscribers = (who: Tenant, listId: string, emails: string[]) =>
    api.http
      .post(`/email/lists/${listId}/subscribers`)
      .set(bearer(who.adminKey))
      .send(emails.map((email) => ({ email })))
      .expect(200);

  const sendToList = (who: Tenant, listId: string, body: Record<string, unknown> = {}) =>
    api.http
      .post('/email/send')
      .set(bearer(who.adminKey))
      .send({
        from: `news@${who.domain}`,
        list: listId,
        subject: `news ${unique()}`,
        text: 'Hello {{email}}',
        scheduleFor: dayAhead(),
        ...body,
      });

  const send = (who: Tenant, to: string | string[], body: Record<string, unknown> = {}) =>
    api.http
      .post('/email/send')
      .set(bearer(who.adminKey))
      .send({ from: `hello@${who.domain}`, to, subject: `s-${unique()}`, text: 'Hello', ...body });

  const listSend = async (who: Tenant, listId: string, listSendId: string): Promise<ListSendStatus> =>
    (await api.http.get(`/email/lists/${listId}/sends/${listSendId}`).set(bearer(who.adminKey)).expect(200)).body;

  /** What GET /settings says the month's emails quota has used. */
  const settingsUsed = async (who: Tenant): Promise<number> =>
    (await api.http.get('/settings').set(bearer(who.adminKey)).expect(200)).body.quotas.emails_per_month.used;

  /** What GET /api/billing/info bills for the month. */
  const billed = async (who: Tenant): Promise<number> =>
    (await api.http.get('/api/billing/info').set(bearer(api.operatorKey)).query({ tenantId: who.accountId }).expect(200)).body.currentPeriod
      .emailsSent;

  async function made(listId: string): Promise<{ messages: number; addresses: number }> {
    const rows: { messages: number; addresses: number }[] = await db().query(
      'SELECT count(*)::int AS messages, count(DISTINCT recipients->>0)::int AS addresses FROM messages WHERE list_id = $1',
      [listId],
    );
    return rows[0];
  }

  const meteredOf = async (listSendId: string): Promise<number> =>
    (await db().query('SELECT metered FROM list_sends WHERE id = $1', [listSendId]))[0].metered;

  it('counts what a list send makes when its list grows after acceptance, even with two fan-outs racing', async () => {
    const who = await tenant({ tier: 'enterprise', quotas: { emails_per_month: 1000 } });
    const listId = await createList(who, addresses(60));
    const subject = `grown ${unique()}`;
    const accepted = await sendToList(who, listId, { subject, scheduleFor: undefined }).expect(200);
    expect(accepted.body).toMatchObject({ status: 'queued', queued: 60 });
    expect(await settingsUsed(who)).toBe(60);

    await addSubscribers(who, listId, addresses(60));
    // A stalled job run beside the live one: neither may write, meter or give back anything twice.
    await Promise.all([fanOut(accepted.body.listSendId), fanOut(accepted.body.listSendId)]);

    expect(await listSend(who, listId, accepted.body.listSendId)).toMatchObject({
      status: 'done',
      queued: 120,
      refused: 0,
      stoppedReason: null,
    });
    expect(await made(listId)).toEqual({ messages: 120, addresses: 120 });
    expect(await meteredOf(accepted.body.listSendId)).toBe(120);
    expect(await settingsUsed(who)).toBe(120);
    expect(await billed(who)).toBe(120);
    // The quota's counter holds the 120 too: one more email fits a quota of 121, the next does not.
    await api.http
      .patch(`/admin/accounts/${who.accountId}`)
      .set(bearer(api.operatorKey))
      .send({ quotas: { emails_per_month: 121 } })
      .expect(200);
    await send(who, 'ada@example.org').expect(200);
    expect((await send(who, 'ada@example.org').expect(429)).body.error.details).toMatchObject({ quota: 'emails_per_month', remaining: 0 });

    const worker = await createTestApp({ shareWith: api, env: { APP_ROLE: 'worker', SMTP_URL: sink.url } });
    try {
      await waitFor(
        'the 120 emails at the SMTP sink',
        () => sink.messages.filter((m) => m.parsed?.subject === subject).length,
        (n) => n >= 120,
        60_000,
      );
    } finally {
      await worker.close();
    }
    const arrived = sink.messages.filter((m) => m.parsed?.subject === subject);
    expect(new Set(arrived.map((m) => m.envelope.rcptTo[0])).size).toBe(120);
    expect(arrived).toHaveLength(120);
  });

  it('stops a list send whose growth passes the quota, after as many as the quota allows, and refuses the next send', async () => {
    const who = await tenant({ tier: 'enterprise', quotas: { emails_per_month: 130 } });
    const listId = await createList(who, addresses(100));
    const accepted = await sendToList(who, listId).expect(200);
    expect(accepted.body.queued).toBe(100);
    await addSubscribers(who, listId, addresses(100));

    // Not an error of its job: it ends, stopped.
    await fanOut(accepted.body.listSendId);

    const stopped = await listSend(who, listId, accepted.body.listSendId);
    expect(stopped).toMatchObject({
      status: 'stopped',
      queued: 130,
      refused: 70,
      stoppedReason: 'emails_per_month',
      completedAt: expect.any(String),
    });
    expect((await made(listId)).messages).toBe(130);
    expect(await meteredOf(accepted.body.listSendId)).toBe(130);
    expect(await settingsUsed(who)).toBe(130);
    expect(await billed(who)).toBe(130);
    const refused = await send(who, 'ada@example.org').expect(429);
    expect(refused.body.error).toMatchObject({ code: 'QUOTA_EXCEEDED', details: { quota: 'emails_per_month', remaining: 0 } });

    // Run again (a retried job): a stopped send makes nothing more.
    await fanOut(accepted.body.listSendId);
    expect((await made(listId)).messages).toBe(130);
    expect(await settingsUsed(who)).toBe(130);
  });

  it('stops with nothing more made when the quota has nothing left for the growth', async () => {
    const who = await tenant({ tier: 'enterprise', quotas: { emails_per_month: 40 } });
    const listId = await createList(who, addresses(40));
    const accepted = await sendToList(who, listId).expect(200);
    await addSubscribers(who, listId, addresses(40));
    await fanOut(accepted.body.listSendId);
    expect(await listSend(who, listId, accepted.body.listSendId)).toMatchObject({
      status: 'stopped',
      queued: 40,
      refused: 40,
      stoppedReason: 'emails_per_month',
    });
    expect((await made(listId)).messages).toBe(40);
    expect(await settingsUsed(who)).toBe(40);
  });

  it('gives back what a list send does not make: its list deleted at once, halfway, or shrunk', async () => {
    const who = await tenant({ tier: 'pro' });

    const deleted = await createList(who, addresses(80));
    const atOnce = await sendToList(who, deleted).expect(200);
    expect(await settingsUsed(who)).toBe(80);
    await api.http.delete(`/email/lists/${deleted}`).set(bearer(who.adminKey)).expect(200);
    await fanOut(atOnce.body.listSendId);
    // Still readable with its list gone: done, nothing made, nothing counted.
    expect(await listSend(who, deleted, atOnce.body.listSendId)).toMatchObject({
      status: 'done',
      queued: 0,
      completedAt: expect.any(String),
    });
    expect(await meteredOf(atOnce.body.listSendId)).toBe(0);
    expect(await settingsUsed(who)).toBe(0);
    expect(await billed(who)).toBe(0);

    const halfway = await createList(who, addresses(120));
    const stoppedEarly = await sendToList(who, halfway).expect(200);
    // The worker shuts down after the first page: 50 made.
    let pages = 0;
    await expect(fanOut(stoppedEarly.body.listSendId, () => pages++ > 0)).rejects.toThrow(/shutting down/);
    await api.http.delete(`/email/lists/${halfway}`).set(bearer(who.adminKey)).expect(200);
    await fanOut(stoppedEarly.body.listSendId);
    expect(await listSend(who, halfway, stoppedEarly.body.listSendId)).toMatchObject({ status: 'done', queued: 50 });
    expect((await made(halfway)).messages).toBe(50);
    expect(await settingsUsed(who)).toBe(50);

    const emails = addresses(80);
    const shrunk = await createList(who, emails);
    const shrinking = await sendToList(who, shrunk).expect(200);
    for (const email of emails.slice(0, 30)) {
      await api.http
        .delete(`/email/lists/${shrunk}/subscribers/${encodeURIComponent(email)}`)
        .set(bearer(who.adminKey))
        .expect(200);
    }
    await fanOut(shrinking.body.listSendId);
    expect(await listSend(who, shrunk, shrinking.body.listSendId)).toMatchObject({ status: 'done', queued: 50 });
    expect(await settingsUsed(who)).toBe(100);
    expect(await billed(who)).toBe(100);
  });

  it('gives a cancelled scheduled email its quota back; a cancel that loses gives nothing', async () => {
    const who = await tenant({ tier: 'enterprise', quotas: { emails_per_month: 5 } });
    await api.http.post('/email/suppression').set(bearer(who.adminKey)).send({ email: 'sup@example.org', reason: 'bounced' }).expect(201);
    const later = { scheduleFor: dayAhead() };

    // Three recipients, one suppressed: two counted.
    const two = (await send(who, ['a1@example.org', 'a2@example.org', 'sup@example.org'], later).expect(200)).body.messageId;
    const one = (await send(who, 'b1@example.org', later).expect(200)).body.messageId;
    const listId = await createList(who, ['l1@example.org', 'l2@example.org']);
    const listSendId = (await sendToList(who, listId).expect(200)).body.listSendId;
    await fanOut(listSendId);
    expect(await settingsUsed(who)).toBe(5);
    await send(who, 'c@example.org').expect(429);

    expect((await api.http.delete(`/email/scheduled/${two}`).set(bearer(who.adminKey)).expect(200)).body.status).toBe('cancelled');
    expect(await settingsUsed(who)).toBe(3);
    expect(await billed(who)).toBe(3);
    // Cancelled already: 409, nothing more given back.
    expect((await api.http.delete(`/email/scheduled/${two}`).set(bearer(who.adminKey)).expect(409)).body.error.code).toBe('CONFLICT');
    expect(await settingsUsed(who)).toBe(3);

    // A list send's scheduled message, cancelled on its own.
    const [listMessage] = await db().query('SELECT id FROM messages WHERE list_id = $1 ORDER BY id LIMIT 1', [listId]);
    await api.http.delete(`/email/scheduled/${listMessage.id}`).set(bearer(who.adminKey)).expect(200);
    expect(await settingsUsed(who)).toBe(2);
    expect(await billed(who)).toBe(2);

    // The quota's counters were given the credits back too: three fit now, and nothing more.
    await send(who, ['d1@example.org', 'd2@example.org', 'd3@example.org']).expect(200);
    await send(who, 'e@example.org').expect(429);
    // A message sent already cannot be cancelled, and gives nothing back.
    await db().query(`UPDATE messages SET status = 'sent' WHERE id = $1`, [one]);
    await api.http.delete(`/email/scheduled/${one}`).set(bearer(who.adminKey)).expect(409);
    expect(await settingsUsed(who)).toBe(5);
  });
});
