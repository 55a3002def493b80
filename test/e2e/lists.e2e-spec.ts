import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { ListSendSweeper } from '../../src/email/list-sends/list-send.sweeper';
import { ListSendsService } from '../../src/email/list-sends/list-sends.service';
import { ListsService } from '../../src/lists/lists.service';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount, createKey } from '../support/factories';
import { SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';
import { waitFor } from '../support/wait-for';

interface ListSendStatus {
  id: string;
  listId: string;
  status: string;
  queued: number;
  suppressed: number;
  failed: number;
  refused: number;
  stoppedReason: string | null;
  createdAt: string;
  completedAt: string | null;
}

describe('mailing lists', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let accountId: string;
  let adminKey: string;
  let usageKey: string;
  let otherKey: string;
  const domain = 'lists.acme.test';

  beforeAll(async () => {
    sink = await startSmtpSink();
    t = await createTestApp({ env: { SMTP_URL: sink.url, LIST_SEND_BATCH_SIZE: '250' } });
    ({ accountId, adminKey } = await createAccount(t, 'Owner'));
    usageKey = (await createKey(t, adminKey, { keyType: 'usage' })).key;
    otherKey = (await createAccount(t, 'Other')).adminKey;
    await createVerifiedDomain(t, accountId, domain);
  });
  afterAll(async () => {
    await t.close();
    await sink.close();
  });

  const createList = async (name = `list ${randomBytes(4).toString('hex')}`): Promise<string> =>
    (await t.http.post('/email/lists').set(bearer(adminKey)).send({ name }).expect(201)).body.id;
  const addSubscribers = (listId: string, body: unknown, key = adminKey) =>
    t.http
      .post(`/email/lists/${listId}/subscribers`)
      .set(bearer(key))
      .send(body as object);
  const listSend = async (listId: string, listSendId: string): Promise<ListSendStatus> =>
    (await t.http.get(`/email/lists/${listId}/sends/${listSendId}`).set(bearer(adminKey)).expect(200)).body;
  const waitUntilDone = (listId: string, listSendId: string, timeoutMs?: number) =>
    waitFor(
      `list send ${listSendId} done`,
      () => listSend(listId, listSendId),
      (s) => s.status === 'done',
      timeoutMs,
    );

  describe('lists', () => {
    it('creates, reads, changes and deletes a list, with a usage key', async () => {
      const created = await t.http
        .post('/email/lists')
        .set(bearer(usageKey))
        .send({ name: 'Newsletter', description: 'Monthly news' })
        .expect(201);
      expect(created.body).toEqual({
        id: expect.stringMatching(/^list_[0-9A-Za-z]{22}$/),
        name: 'Newsletter',
        description: 'Monthly news',
        subscribers: { subscribed: 0, unsubscribed: 0 },
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
      });
      const id = created.body.id;
      expect((await t.http.get(`/email/lists/${id}`).set(bearer(usageKey)).expect(200)).body).toEqual(created.body);

      const renamed = await t.http
        .patch(`/email/lists/${id}`)
        .set(bearer(usageKey))
        .send({ name: 'Newsletter (monthly)', description: null })
        .expect(200);
      expect(renamed.body).toEqual({ ...created.body, name: 'Newsletter (monthly)', description: null, updatedAt: expect.any(String) });
      const described = await t.http.patch(`/email/lists/${id}`).set(bearer(usageKey)).send({ description: 'Back' }).expect(200);
      expect(described.body).toMatchObject({ name: 'Newsletter (monthly)', description: 'Back' });

      const deleted = await t.http.delete(`/email/lists/${id}`).set(bearer(usageKey)).expect(200);
      expect(deleted.body).toEqual({ success: true, message: 'List Newsletter (monthly) deleted' });
      const gone = await t.http.get(`/email/lists/${id}`).set(bearer(usageKey)).expect(404);
      expect(gone.body).toEqual({
        error: { code: 'NOT_FOUND', message: `List '${id}' was not found` },
        documentation: expect.stringContaining('/docs#'),
      });
    });

    it('refuses a second list of the same name, on create and on rename (409), and bad fields (400)', async () => {
      await t.http.post('/email/lists').set(bearer(adminKey)).send({ name: 'Taken' }).expect(201);
      const duplicate = await t.http.post('/email/lists').set(bearer(adminKey)).send({ name: 'Taken' }).expect(409);
      expect(duplicate.body.error.code).toBe('CONFLICT');
      const other = await createList('Free');
      expect((await t.http.patch(`/email/lists/${other}`).set(bearer(adminKey)).send({ name: 'Taken' }).expect(409)).body.error.code).toBe(
        'CONFLICT',
      );
      // Another account may use the name.
      await t.http.post('/email/lists').set(bearer(otherKey)).send({ name: 'Taken' }).expect(201);

      const bad = await t.http.post('/email/lists').set(bearer(adminKey)).send({ name: ' ', color: 'red' }).expect(400);
      expect(bad.body.error.details.fields.map((f: { field: string }) => f.field).sort()).toEqual(['color', 'name']);
    });

    it('pages through the lists newest first with a cursor', async () => {
      const { adminKey: key } = await createAccount(t, 'Pager');
      const ids: string[] = [];
      for (let i = 0; i < 5; i++)
        ids.push(
          (
            await t.http
              .post('/email/lists')
              .set(bearer(key))
              .send({ name: `L${i}` })
              .expect(201)
          ).body.id,
        );
      const seen: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await t.http
          .get('/email/lists')
          .query({ limit: 2, ...(cursor ? { cursor } : {}) })
          .set(bearer(key))
          .expect(200);
        expect(page.body.lists.length).toBeLessThanOrEqual(2);
        seen.push(...page.body.lists.map((l: { id: string }) => l.id));
        cursor = page.body.nextCursor ?? undefined;
      } while (cursor);
      expect(seen).toEqual([...ids].reverse());
      expect((await t.http.get('/email/lists').query({ cursor: 'bm9wZQ' }).set(bearer(key)).expect(400)).body.error.code).toBe(
        'VALIDATION_FAILED',
      );
    });

    it('answers 404 for another account’s list on every route, exactly as for an unknown one', async () => {
      const id = await createList();
      await addSubscribers(id, [{ email: 'ada@example.org' }]).expect(200);
      const other = bearer(otherKey);
      const notFound = (res: { body: { error: { code: string } } }) => expect(res.body.error.code).toBe('NOT_FOUND');
      notFound(await t.http.get(`/email/lists/${id}`).set(other).expect(404));
      notFound(await t.http.patch(`/email/lists/${id}`).set(other).send({ name: 'Mine' }).expect(404));
      notFound(await t.http.delete(`/email/lists/${id}`).set(other).expect(404));
      notFound(await addSubscribers(id, [{ email: 'eve@example.org' }], otherKey).expect(404));
      notFound(await t.http.get(`/email/lists/${id}/subscribers`).set(other).expect(404));
      notFound(await t.http.delete(`/email/lists/${id}/subscribers/ada%40example.org`).set(other).expect(404));
      expect(await t.app.get(ListsService).markUnsubscribed('acc_other', id, 'ada@example.org')).toBe(false);
      const list = await t.http.get(`/email/lists/${id}`).set(bearer(adminKey)).expect(200);
      expect(list.body.subscribers).toEqual({ subscribed: 1, unsubscribed: 0 });
    });
  });

  describe('subscribers', () => {
    it('adds subscribers deduplicated, reports invalid entries by index and adds the valid ones', async () => {
      const id = await createList();
      const first = await addSubscribers(id, [
        { email: 'Ada@Example.org', name: 'Ada' },
        { email: 'not-an-address', name: 'Nobody' },
        { email: 'grace@example.org', name: 'Grace' },
        { email: 'ADA@example.org', name: 'Ada Lovelace' },
        { email: 'mallory@example.org', name: 'Mallory\r\nBcc: everyone@example.org' },
        { email: 'linus@example.org' },
      ]).expect(200);
      expect(first.body).toEqual({
        added: 3,
        existing: 1,
        invalid: [
          { index: 1, field: 'subscribers[1].email', message: 'email must be an email address' },
          { index: 4, field: 'subscribers[4].name', message: 'name may not contain CR or LF' },
        ],
      });

      // Marked unsubscribed, an address stays so when added again; its name follows the call.
      expect(await t.app.get(ListsService).markUnsubscribed(accountId, id, 'GRACE@example.org')).toBe(true);
      expect(await t.app.get(ListsService).markUnsubscribed(accountId, id, 'grace@example.org')).toBe(false);
      const second = await addSubscribers(id, {
        subscribers: [{ email: 'grace@example.org', name: 'Grace Hopper' }, { email: 'new@example.org' }],
      }).expect(200);
      expect(second.body).toEqual({ added: 1, existing: 1, invalid: [] });

      const page = await t.http.get(`/email/lists/${id}/subscribers`).set(bearer(usageKey)).expect(200);
      expect(page.body).toEqual({
        subscribers: [
          { email: 'ada@example.org', name: 'Ada Lovelace', status: 'subscribed', createdAt: expect.any(String), unsubscribedAt: null },
          {
            email: 'grace@example.org',
            name: 'Grace Hopper',
            status: 'unsubscribed',
            createdAt: expect.any(String),
            unsubscribedAt: expect.any(String),
          },
          { email: 'linus@example.org', name: null, status: 'subscribed', createdAt: expect.any(String), unsubscribedAt: null },
          { email: 'new@example.org', name: null, status: 'subscribed', createdAt: expect.any(String), unsubscribedAt: null },
        ],
        nextCursor: null,
      });
      const unsubscribed = await t.http
        .get(`/email/lists/${id}/subscribers`)
        .query({ status: 'unsubscribed' })
        .set(bearer(adminKey))
        .expect(200);
      expect(unsubscribed.body.subscribers.map((s: { email: string }) => s.email)).toEqual(['grace@example.org']);
      const list = await t.http.get(`/email/lists/${id}`).set(bearer(adminKey)).expect(200);
      expect(list.body.subscribers).toEqual({ subscribed: 3, unsubscribed: 1 });
    });

    it('refuses more than 1000 subscribers in one call, and bodies that are not subscribers', async () => {
      const id = await createList();
      const many = Array.from({ length: 1001 }, (_, i) => ({ email: `s${i}@example.org` }));
      const tooMany = await addSubscribers(id, many).expect(400);
      expect(tooMany.body.error).toMatchObject({
        code: 'VALIDATION_FAILED',
        details: { fields: [{ field: 'subscribers', message: expect.stringContaining('at most 1000') }] },
      });
      await addSubscribers(id, { subscribers: [], extra: true }).expect(400);
      await addSubscribers(id, { email: 'ada@example.org' }).expect(400);
      const list = await t.http.get(`/email/lists/${id}`).set(bearer(adminKey)).expect(200);
      expect(list.body.subscribers).toEqual({ subscribed: 0, unsubscribed: 0 });
      expect((await addSubscribers(id, many.slice(0, 1000)).expect(200)).body).toEqual({ added: 1000, existing: 0, invalid: [] });
    });

    it('pages subscribers in address order with a cursor and removes one', async () => {
      const id = await createList();
      const addresses = Array.from({ length: 7 }, (_, i) => `member${i}@example.org`);
      await addSubscribers(
        id,
        [...addresses].reverse().map((email) => ({ email })),
      ).expect(200);
      const seen: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await t.http
          .get(`/email/lists/${id}/subscribers`)
          .query({ limit: 3, ...(cursor ? { cursor } : {}) })
          .set(bearer(adminKey))
          .expect(200);
        expect(page.body.subscribers.length).toBeLessThanOrEqual(3);
        seen.push(...page.body.subscribers.map((s: { email: string }) => s.email));
        cursor = page.body.nextCursor ?? undefined;
      } while (cursor);
      expect(seen).toEqual(addresses);

      const removed = await t.http
        .delete(`/email/lists/${id}/subscribers/${encodeURIComponent('MEMBER3@example.org')}`)
        .set(bearer(adminKey))
        .expect(200);
      expect(removed.body).toEqual({ success: true, message: 'member3@example.org removed from the list' });
      expect(
        (await t.http.delete(`/email/lists/${id}/subscribers/member3%40example.org`).set(bearer(adminKey)).expect(404)).body.error.code,
      ).toBe('NOT_FOUND');
      const after = await t.http.get(`/email/lists/${id}/subscribers`).set(bearer(adminKey)).expect(200);
      expect(after.body.subscribers.map((s: { email: string }) => s.email)).toEqual(addresses.filter((a) => a !== 'member3@example.org'));
    });
  });

  describe('list sends', () => {
    it('sends one personalized message to each subscribed, unsuppressed subscriber', async () => {
      const tag = `news-${randomBytes(4).toString('hex')}`;
      await t.http
        .post('/email/templates')
        .set(bearer(adminKey))
        .send({ name: tag, subject: '{{tag}} for {{name}}', text: 'Hello {{name}} <{{email}}>\nUnsubscribe: {{unsubscribeUrl}}' })
        .expect(201);
      const id = await createList();
      const people = [
        { email: 'ada@example.org', name: 'Ada' },
        { email: 'grace@example.org', name: 'Grace' },
        { email: 'linus@example.org', name: 'Linus' },
        { email: 'gone@example.org', name: 'Gone' },
        { email: 'bounced@example.org', name: 'Bounced' },
      ];
      await addSubscribers(id, people).expect(200);
      expect(await t.app.get(ListsService).markUnsubscribed(accountId, id, 'gone@example.org')).toBe(true);
      await t.http.post('/email/suppression').set(bearer(adminKey)).send({ email: 'Bounced@example.org', reason: 'bounced' }).expect(201);

      const accepted = await t.http
        .post('/email/send')
        .set(bearer(usageKey))
        .send({ from: `News <news@${domain}>`, list: id, template: tag, variables: { tag }, metadata: { campaign: tag } })
        .expect(200);
      expect(accepted.body).toEqual({
        success: true,
        listSendId: expect.stringMatching(/^lsnd_[0-9A-Za-z]{22}$/),
        listId: id,
        status: 'queued',
        queued: 3,
      });

      const delivered = people.slice(0, 3);
      const mails = await Promise.all(delivered.map(({ name }) => sink.waitFor((m) => m.parsed?.subject === `${tag} for ${name}`)));
      const urls = mails.map((mail, i) => {
        expect(mail.envelope.rcptTo).toEqual([delivered[i].email]);
        expect(mail.parsed!.to).toMatchObject({ value: [{ address: delivered[i].email, name: delivered[i].name }] });
        expect(mail.parsed!.text).toContain(`Hello ${delivered[i].name} <${delivered[i].email}>`);
        const url = /Unsubscribe: (\S+)/.exec(mail.parsed!.text ?? '')?.[1];
        expect(url).toMatch(/^http:\/\/mailroom\.test\/u\/\S+$/);
        return url;
      });
      expect(new Set(urls).size).toBe(3);

      const done = await waitUntilDone(id, accepted.body.listSendId);
      expect(done).toEqual({
        id: accepted.body.listSendId,
        listId: id,
        status: 'done',
        queued: 3,
        suppressed: 1,
        failed: 0,
        refused: 0,
        stoppedReason: null,
        attempts: 1,
        lastError: null,
        createdAt: expect.any(String),
        completedAt: expect.any(String),
      });
      const rows: { recipients: string[]; list_id: string; metadata: unknown }[] = await t.app
        .get(DataSource)
        .query('SELECT recipients, list_id, metadata FROM messages WHERE list_id = $1 ORDER BY recipients', [id]);
      expect(rows).toEqual(delivered.map(({ email }) => ({ recipients: [email], list_id: id, metadata: { campaign: tag } })));
      expect(sink.messages.filter((m) => m.parsed?.subject?.startsWith(tag))).toHaveLength(3);
    });

    it('refuses to with list (400), an unknown or foreign list (404) and an unverified from domain (403)', async () => {
      const id = await createList();
      await addSubscribers(id, [{ email: 'ada@example.org' }]).expect(200);
      const send = (body: object, key = adminKey) =>
        t.http
          .post('/email/send')
          .set(bearer(key))
          .send({ from: `news@${domain}`, subject: 'Hi {{name}}', text: 'Hello', ...body });

      const withTo = await send({ list: id, to: 'ada@example.org' }).expect(400);
      expect(withTo.body.error.details.fields).toEqual([{ field: 'to', message: expect.stringContaining('cannot be used with list') }]);
      expect((await send({ list: 'list_unknown' }).expect(404)).body.error.code).toBe('NOT_FOUND');
      expect((await send({ list: id, from: `news@${domain}` }, otherKey).expect(404)).body.error.code).toBe('NOT_FOUND');
      expect((await send({ list: id, from: 'news@unverified.example.com' }).expect(403)).body.error.code).toBe('DOMAIN_NOT_VERIFIED');
      expect((await send({ list: id, template: 'missing' }).expect(404)).body.error.code).toBe('NOT_FOUND');
      expect((await send({ list: id, subject: '{{#broken}}' }).expect(400)).body.error.code).toBe('VALIDATION_FAILED');
      // Without to or list, a send still needs its recipients.
      expect((await send({}).expect(400)).body.error.code).toBe('VALIDATION_FAILED');
      const sends: { n: number }[] = await t.app
        .get(DataSource)
        .query('SELECT count(*)::int AS n FROM list_sends WHERE list_id = $1', [id]);
      expect(sends[0].n).toBe(0);
      expect((await t.http.get(`/email/lists/${id}/sends/lsnd_unknown`).set(bearer(adminKey)).expect(404)).body.error.code).toBe(
        'NOT_FOUND',
      );
    });

    it('fans 1,200 subscribers out a page at a time, each address exactly once, even with a second run racing the first', async () => {
      const id = await createList();
      const addresses = Array.from({ length: 1200 }, (_, i) => `reader${String(i).padStart(4, '0')}@example.org`);
      await addSubscribers(
        id,
        addresses.slice(0, 1000).map((email) => ({ email })),
      ).expect(200);
      await addSubscribers(
        id,
        addresses.slice(1000).map((email) => ({ email })),
      ).expect(200);

      // Scheduled a day ahead: the messages are made now and wait, so the SMTP sink is left alone.
      const accepted = await t.http
        .post('/email/send')
        .set(bearer(adminKey))
        .send({
          from: `news@${domain}`,
          list: id,
          subject: 'Big {{email}}',
          html: '<p>Hi {{email}}</p>',
          scheduleFor: new Date(Date.now() + 86_400_000).toISOString(),
        })
        .expect(200);
      expect(accepted.body.queued).toBe(1200);
      // A stalled job run beside the live one must not write anyone twice.
      await t.app.get(ListSendsService).fanOut(accepted.body.listSendId, () => false);

      const done = await waitUntilDone(id, accepted.body.listSendId, 30_000);
      expect(done).toMatchObject({ status: 'done', queued: 1200, suppressed: 0, failed: 0 });
      const rows: { recipient: string; n: number; status: string }[] = await t.app
        .get(DataSource)
        .query(
          `SELECT recipients->>0 AS recipient, count(*)::int AS n, min(status) AS status FROM messages WHERE list_id = $1 GROUP BY 1 ORDER BY 1`,
          [id],
        );
      expect(rows.map((r) => r.recipient)).toEqual(addresses);
      expect(rows.every((r) => r.n === 1 && r.status === 'scheduled')).toBe(true);
    });

    it('resumes after the last committed page when the sweeper finds a list send without a live job', async () => {
      const id = await createList();
      const addresses = Array.from({ length: 600 }, (_, i) => `resume${String(i).padStart(3, '0')}@example.org`);
      await addSubscribers(
        id,
        addresses.map((email) => ({ email })),
      ).expect(200);
      const accepted = await t.http
        .post('/email/send')
        .set(bearer(adminKey))
        .send({
          from: `news@${domain}`,
          list: id,
          subject: 'Resume',
          text: 'x',
          scheduleFor: new Date(Date.now() + 86_400_000).toISOString(),
        })
        .expect(200);
      await waitUntilDone(id, accepted.body.listSendId);

      // As a run that stopped after committing the first page, and whose job Redis then lost, would leave it.
      const db = t.app.get(DataSource);
      await db.query('DELETE FROM messages WHERE list_id = $1 AND recipients->>0 > $2', [id, addresses[249]]);
      await db.query(
        `UPDATE list_sends SET status = 'sending', cursor = $2, queued = 250, completed_at = NULL, updated_at = now() - interval '1 hour' WHERE id = $1`,
        [accepted.body.listSendId, addresses[249]],
      );
      expect(await listSend(id, accepted.body.listSendId)).toMatchObject({ status: 'sending', queued: 250 });
      await t.app.get(ListSendSweeper).sweep();

      expect(await waitUntilDone(id, accepted.body.listSendId)).toMatchObject({ status: 'done', queued: 600 });
      const rows: { n: number; distinct: number }[] = await db.query(
        'SELECT count(*)::int AS n, count(DISTINCT recipients->>0)::int AS distinct FROM messages WHERE list_id = $1',
        [id],
      );
      expect(rows[0]).toEqual({ n: 600, distinct: 600 });
    });
  });
});
