import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { newId } from '../../src/common/ids';
import { AcceptanceRepository } from '../../src/outbox/acceptance.repository';
import { Message } from '../../src/outbox/message.entity';
import { RedisService } from '../../src/redis/redis.service';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount } from '../support/factories';
import { SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';

// Tenant-safe acceptance: concurrent sends of different accounts share a statement, and nothing one of them
// sends can fail another; an Idempotency-Key holds whatever happens to Redis after the commit.
describe('email acceptance', () => {
  let t: TestApp;
  let sink: SmtpSink;
  const accounts: { accountId: string; adminKey: string; domain: string }[] = [];
  const unique = () => randomBytes(6).toString('hex');

  beforeAll(async () => {
    sink = await startSmtpSink();
    t = await createTestApp({ env: { SMTP_URL: sink.url, EMAIL_SWEEP_INTERVAL_MS: '300', EMAIL_SWEEP_AFTER_MS: '500' } });
    for (const name of ['one', 'two']) {
      const account = await createAccount(t, name);
      const domain = `${name}.acme.test`;
      await createVerifiedDomain(t, account.accountId, domain);
      accounts.push({ ...account, domain });
    }
  });

  afterAll(async () => {
    await t.close();
    await sink.close();
  });

  const send = (who: (typeof accounts)[number], body: Record<string, unknown>, headers: Record<string, string> = {}) =>
    t.http
      .post('/email/send')
      .set(bearer(who.adminKey))
      .set(headers)
      .send({ from: `hello@${who.domain}`, to: 'ada@example.org', text: 'x', ...body });

  async function messagesWithSubject(subject: string): Promise<number> {
    const rows: { n: number }[] = await t.app
      .get(DataSource)
      .query('SELECT count(*)::int AS n FROM messages WHERE subject = $1', [subject]);
    return rows[0].n;
  }

  function messageRow(accountId: string, text: string): Message {
    const id = newId('msg');
    return Object.assign(new Message(), {
      id,
      accountId,
      status: 'queued',
      fromAddress: 'hello@one.acme.test',
      fromDomain: 'one.acme.test',
      subject: 'row',
      recipients: ['ada@example.org'],
      pendingRecipients: ['ada@example.org'],
      suppressedRecipients: [],
      headerMessageId: `<${id}@one.acme.test>`,
      content: {
        from: { name: '', address: 'hello@one.acme.test' },
        to: [],
        cc: [],
        replyTo: [],
        subject: 'row',
        text,
        headers: {},
        attachments: [],
        date: new Date().toISOString(),
      },
      priority: 'normal',
      scheduledFor: null,
      tracking: null,
      listId: null,
      templateName: null,
    });
  }

  it('fails only the row PostgreSQL refuses when concurrent inserts share a statement', async () => {
    const repository = t.app.get(AcceptanceRepository);
    const [one, two] = accounts;
    const rows = [messageRow(one.accountId, 'fine'), messageRow(two.accountId, 'nul \u0000 here'), messageRow(two.accountId, 'fine too')];
    const results = await Promise.allSettled(
      rows.map((row) => repository.insert({ messages: [{ message: row, events: [{ type: 'queued' }] }] })),
    );
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    const stored: { id: string }[] = await t.app
      .get(DataSource)
      .query('SELECT id FROM messages WHERE id = ANY($1)', [rows.map((r) => r.id)]);
    expect(stored.map((r) => r.id).sort()).toEqual([rows[0].id, rows[2].id].sort());
  });

  it("answers a bad send of one account with its own 400 while another account's concurrent sends go through", async () => {
    const [one, two] = accounts;
    const subject = `tenant ${unique()}`;
    const results = await Promise.all([
      ...Array.from({ length: 5 }, (_, i) => send(one, { subject: `${subject} ${i}` })),
      send(two, { subject: `${subject} bad`, text: 'a NUL \u0000 in text' }),
      send(two, { subject: `${subject} lone`, html: 'a lone surrogate \ud800 here' }),
    ]);
    expect(results.slice(0, 5).map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(results[5].status).toBe(400);
    expect(results[5].body.error.details.fields).toContainEqual(expect.objectContaining({ field: 'text' }));
    expect(results[6].status).toBe(400);
    expect(results[6].body.error.details.fields).toContainEqual(expect.objectContaining({ field: 'html' }));
    await Promise.all(Array.from({ length: 5 }, (_, i) => sink.waitFor((m) => m.parsed?.subject === `${subject} ${i}`)));
  });

  it('takes a message bigger than the group-commit byte cap beside small ones', async () => {
    const [one, two] = accounts;
    const subject = `big ${unique()}`;
    const attachment = randomBytes(13 * 1024 * 1024).toString('base64'); // 17.3 MB of base64: alone in its statement
    const results = await Promise.all([
      send(one, { subject: `${subject} large`, attachments: [{ filename: 'big.bin', content: attachment }] }),
      send(two, { subject: `${subject} small` }),
    ]);
    expect(results.map((r) => r.status)).toEqual([200, 200]);
    const large = await sink.waitFor((m) => m.parsed?.subject === `${subject} large`, 30_000);
    expect(large.parsed?.attachments[0].content.length).toBe(13 * 1024 * 1024);
  });

  describe('Idempotency-Key when Redis fails after the commit', () => {
    const redis = () => t.app.get(RedisService).client;

    it('answers 200 while Redis is gone and replays the same message from PostgreSQL afterwards', async () => {
      const [one] = accounts;
      const key = `order-${unique()}`;
      const subject = `idem outage ${unique()}`;
      redis().disconnect();
      let first;
      try {
        first = await send(one, { subject }, { 'Idempotency-Key': key });
      } finally {
        await redis().connect();
      }
      expect(first.status).toBe(200);
      const replay = await send(one, { subject }, { 'Idempotency-Key': key }).expect(200);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.body).toEqual(first.body);
      const conflict = await send(one, { subject, text: 'other body' }, { 'Idempotency-Key': key }).expect(409);
      expect(conflict.body.error.code).toBe('IDEMPOTENCY_CONFLICT');

      await sink.waitFor((m) => m.parsed?.subject === subject);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(sink.messages.filter((m) => m.parsed?.subject === subject)).toHaveLength(1);
    });

    it('replays from PostgreSQL when Redis forgot the answer', async () => {
      const [, two] = accounts;
      const key = `order-${unique()}`;
      const subject = `idem forgot ${unique()}`;
      const first = await send(two, { subject }, { 'Idempotency-Key': key }).expect(200);
      const keys = await redis().keys(`${t.env.REDIS_KEY_PREFIX}idempotency:*`);
      expect(keys.length).toBeGreaterThan(0);
      await redis().del(...keys);

      const replay = await send(two, { subject }, { 'Idempotency-Key': key }).expect(200);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.body.messageId).toBe(first.body.messageId);
      expect(await messagesWithSubject(subject)).toBe(1);
    });

    it('lets concurrent duplicates make one message while Redis is gone', async () => {
      const [one] = accounts;
      const key = `order-${unique()}`;
      const subject = `idem race ${unique()}`;
      redis().disconnect();
      let results;
      try {
        results = await Promise.all(Array.from({ length: 4 }, () => send(one, { subject }, { 'Idempotency-Key': key })));
      } finally {
        await redis().connect();
      }
      expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200]);
      expect(new Set(results.map((r) => r.body.messageId)).size).toBe(1);
      expect(await messagesWithSubject(subject)).toBe(1);
    });
  });
});
