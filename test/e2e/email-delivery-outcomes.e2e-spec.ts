import { createHash, randomBytes } from 'node:crypto';
import { getQueueToken } from '@nestjs/bull';
import { Logger } from '@nestjs/common';
import type { Queue } from 'bull';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { QueueName } from '../../src/queue/queue.constants';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount } from '../support/factories';
import { SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';
import { waitFor } from '../support/wait-for';

interface Status {
  status: string;
  events: { type: string; recipient?: string; detail?: string }[];
}

// What a delivery attempt ends in, when the provider, the database or the sender's own settings get in the
// way. An API-only instance takes the sends and answers /health/ready; a worker instance delivers to a sink
// that asks for AUTH. The whole D-20 retry schedule (24 h) shrinks to about 9 s.
describe('email delivery outcomes', () => {
  let api: TestApp;
  let worker: TestApp;
  let sink: SmtpSink;
  let adminKey: string;
  let accountId: string;
  const domain = 'outcomes.acme.test';
  const unique = () => randomBytes(4).toString('hex');

  beforeAll(async () => {
    sink = await startSmtpSink({ auth: true });
    const timing = { EMAIL_RETRY_FIRST_DELAY_MS: '1', EMAIL_SWEEP_INTERVAL_MS: '300', EMAIL_SWEEP_AFTER_MS: '500' };
    api = await createTestApp({ env: { APP_ROLE: 'api', ...timing } });
    ({ accountId, adminKey } = await createAccount(api, 'Outcomes'));
    await createVerifiedDomain(api, accountId, domain);
    worker = await createTestApp({
      shareWith: api,
      env: { APP_ROLE: 'worker', SMTP_URL: `smtp://mailroom:secret@127.0.0.1:${sink.port}` },
    });
  });

  afterAll(async () => {
    await worker?.close();
    await api?.close();
    await sink?.close();
  });

  const send = (body: Record<string, unknown>) =>
    api.http
      .post('/email/send')
      .set(bearer(adminKey))
      .send({ from: `hello@${domain}`, text: 'x', ...body })
      .expect(200)
      .then((res) => res.body.messageId as string);

  const statusOf = async (messageId: string): Promise<Status> =>
    (await api.http.get(`/email/status/${messageId}`).set(bearer(adminKey)).expect(200)).body;

  const waitForStatus = (messageId: string, status: string) =>
    waitFor(
      `${messageId} → ${status}`,
      () => statusOf(messageId),
      (s) => s.status === status,
    );
  const isSuppressed = async (email: string) =>
    (await api.http.get('/email/suppression/check').query({ email }).set(bearer(adminKey)).expect(200)).body.suppressed as boolean;
  const ready = () => api.http.get('/health/ready');
  const arrived = (subject: string) => sink.messages.filter((m) => m.parsed?.subject === subject);

  it('defers every message on a wrong SMTP password (535 to AUTH), suppresses nobody, reports the provider down once, and recovers', async () => {
    const errors = jest.spyOn(Logger.prototype, 'error');
    const recipients = [`ada-${unique()}@example.org`, `bob-${unique()}@example.org`];
    const subjects = [`auth ${unique()}`, `auth ${unique()}`];
    try {
      sink.rejectAuth(true);
      const ids = await Promise.all(subjects.map((subject, i) => send({ to: recipients[i], subject })));
      for (const id of ids) {
        const deferred = await waitFor(
          `two deferrals of ${id}`,
          () => statusOf(id),
          (s) => s.events.filter((e) => e.type === 'deferred').length >= 2,
        );
        expect(deferred.status).toBe('deferred');
        expect(deferred.events.find((e) => e.type === 'deferred')?.detail).toMatch(/535/);
        expect(deferred.events.map((e) => e.type)).not.toContain('bounced');
      }
      for (const recipient of recipients) expect(await isSuppressed(recipient)).toBe(false);

      // An API-only instance has no transport: it reads what the workers saw.
      const down = await ready().expect(503);
      expect(down.body).toMatchObject({ status: 'unavailable', checks: { postgres: 'up', redis: 'up', provider: 'down' } });
      expect(errors.mock.calls.filter(([message]) => /SMTP provider is failing/.test(String(message)))).toHaveLength(1);

      sink.rejectAuth(false);
      for (const id of ids) await waitForStatus(id, 'sent');
      for (const subject of subjects) expect(arrived(subject)).toHaveLength(1);
      const up = await waitFor(
        '/health/ready → 200',
        () => ready(),
        (res) => res.status === 200,
      );
      expect(up.body.checks.provider).toBe('up');
      for (const recipient of recipients) expect(await isSuppressed(recipient)).toBe(false);
    } finally {
      sink.rejectAuth(false);
      errors.mockRestore();
    }
  });

  it('defers, without bouncing or suppressing anyone, a policy 554 at DATA and a 5xx to MAIL FROM', async () => {
    const dataRecipient = `carol-${unique()}@example.org`;
    const dataSubject = `policy ${unique()}`;
    sink.failNext(3, 554, '5.7.1 Message refused by policy');
    const dataId = await send({ to: dataRecipient, subject: dataSubject });
    const afterData = await waitForStatus(dataId, 'sent');
    expect(afterData.events.map((e) => e.type)).toEqual(['queued', 'deferred', 'deferred', 'deferred', 'sent']);
    expect(afterData.events[1].detail).toContain('554 5.7.1 Message refused by policy');

    const mailFromRecipient = `dave-${unique()}@example.org`;
    const mailFromSubject = `sender ${unique()}`;
    // The envelope sender is the message's VERP return path (D-31); nothing else of this suite is in flight now.
    sink.rejectSender(/^bounces\+/, 550);
    try {
      const id = await send({ to: mailFromRecipient, subject: mailFromSubject });
      const deferred = await waitFor(
        `deferrals of ${id}`,
        () => statusOf(id),
        (s) => s.events.filter((e) => e.type === 'deferred').length >= 2,
      );
      expect(deferred.status).toBe('deferred');
      expect(deferred.events[1].detail).toMatch(/MAIL FROM.*550 5\.7\.1 Sender not allowed/);
      sink.clearRejections();
      await waitForStatus(id, 'sent');
    } finally {
      sink.clearRejections();
    }
    expect(await isSuppressed(dataRecipient)).toBe(false);
    expect(await isSuppressed(mailFromRecipient)).toBe(false);
    expect(arrived(dataSubject)).toHaveLength(1);
    expect(arrived(mailFromSubject)).toHaveLength(1);
  });

  it('bounces and suppresses only the recipient refused at RCPT TO', async () => {
    const refused = `gone-${unique()}@example.org`;
    const taken = `erin-${unique()}@example.org`;
    const subject = `rcpt ${unique()}`;
    sink.rejectRecipient(refused, 550);
    try {
      const id = await send({ to: [taken, refused], subject });
      const sent = await waitForStatus(id, 'sent');
      expect(sent.events).toContainEqual(
        expect.objectContaining({ type: 'bounced', recipient: refused, detail: expect.stringContaining('550') }),
      );
      expect(sent.events).toContainEqual(expect.objectContaining({ type: 'sent', recipient: taken }));
    } finally {
      sink.clearRejections();
    }
    await waitFor(
      `${refused} suppressed`,
      () => isSuppressed(refused),
      (suppressed) => suppressed,
    );
    expect(await isSuppressed(taken)).toBe(false);
    expect(arrived(subject).map((m) => m.envelope.rcptTo)).toEqual([[taken]]);
  });

  it('fails, with an event, a message whose every attempt ends in an error of ours (an unreadable DKIM key), and never queues it again', async () => {
    const broken = 'broken.outcomes.acme.test';
    await createVerifiedDomain(api, accountId, broken);
    await api.app.get(DataSource).query(`UPDATE domains SET dkim_private_key = 'v1.AAAA.AAAA.AAAA' WHERE name = $1`, [broken]);
    const subject = `dkim ${unique()}`;
    const id = await send({ from: `hello@${broken}`, to: `frank-${unique()}@example.org`, subject });

    const failed = await waitForStatus(id, 'failed');
    const last = failed.events[failed.events.length - 1];
    expect(last).toMatchObject({ type: 'failed', detail: `gave up after 29 attempts: the DKIM key of ${broken} could not be read` });
    expect(failed.events.filter((e) => e.type === 'deferred')).toHaveLength(28);

    // The sweeper runs every 300 ms and looks at messages idle for 500 ms: it must leave this one alone.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const later = await statusOf(id);
    expect(later.status).toBe('failed');
    expect(later.events).toHaveLength(failed.events.length);
    expect(arrived(subject)).toHaveLength(0);
  });

  it('fails at once, with its reason, a message whose stored attachment is gone, instead of retrying it', async () => {
    const bytes = randomBytes(4096);
    const subject = `attachment gone ${unique()}`;
    const id = await send({
      to: `erin-${unique()}@example.org`,
      subject,
      attachments: [{ filename: 'gone.bin', content: bytes.toString('base64') }],
      scheduleFor: new Date(Date.now() + 3000).toISOString(),
    });
    const hash = createHash('sha256').update(bytes).digest('hex');
    await api.app.get(DataSource).query('DELETE FROM attachment_chunks WHERE hash = $1', [hash]);

    const failed = await waitForStatus(id, 'failed');
    expect(failed.events.map((e) => e.type)).toEqual(['queued', 'scheduled', 'failed']);
    expect(failed.events[2]).toMatchObject({ detail: 'the attachment gone.bin is no longer stored' });
    expect(arrived(subject)).toHaveLength(0);
  });

  it('fails, rather than re-queueing, a message without a queue job whose attempts are used up', async () => {
    const subject = `used up ${unique()}`;
    const id = await send({ to: `gina-${unique()}@example.org`, subject, scheduleFor: new Date(Date.now() + 3600_000).toISOString() });
    const queue = api.app.get<Queue>(getQueueToken(QueueName.Email));
    await (await queue.getJob(id))!.remove();
    // As a worker leaves it when the write of its last attempt's end was lost: no job, 29 attempts counted.
    await api.app
      .get(DataSource)
      .query(
        `UPDATE messages SET status = 'deferred', scheduled_for = NULL, attempts = 29, updated_at = now() - interval '1 hour' WHERE id = $1`,
        [id],
      );

    const failed = await waitForStatus(id, 'failed');
    expect(failed.events[failed.events.length - 1]).toMatchObject({ type: 'failed', detail: 'gave up after 29 attempts' });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(arrived(subject)).toHaveLength(0);
    expect(await queue.getJob(id)).toBeNull();
  });

  it('holds a scheduled message to the suppression list as it is when the message is sent', async () => {
    const stays = `hank-${unique()}@example.org`;
    const leaves = `ivy-${unique()}@example.org`;
    const subject = `scheduled suppression ${unique()}`;
    const id = await send({ to: [stays, leaves], subject, scheduleFor: new Date(Date.now() + 1500).toISOString() });
    await api.http.post('/email/suppression').set(bearer(adminKey)).send({ email: leaves, reason: 'unsubscribed' }).expect(201);

    const mail = await sink.waitFor((m) => m.parsed?.subject === subject);
    expect(mail.envelope.rcptTo).toEqual([stays]);
    const sent = await waitForStatus(id, 'sent');
    expect(sent.events).toContainEqual(expect.objectContaining({ type: 'suppressed', recipient: leaves }));
    expect(sent.events.map((e) => e.type)).toEqual(['queued', 'scheduled', 'suppressed', 'sent']);
  });

  it('fails, instead of sending unsigned, a scheduled message whose domain is no longer verified when it is due', async () => {
    const gone = 'gone.outcomes.acme.test';
    await createVerifiedDomain(api, accountId, gone);
    const subject = `unverified ${unique()}`;
    const id = await send({
      from: `hello@${gone}`,
      to: `jack-${unique()}@example.org`,
      subject,
      scheduleFor: new Date(Date.now() + 1500).toISOString(),
    });
    await api.http.delete(`/domains/${gone}`).set(bearer(adminKey)).expect(200);

    const failed = await waitForStatus(id, 'failed');
    expect(failed.events[failed.events.length - 1]).toMatchObject({
      type: 'failed',
      detail: expect.stringContaining(`${gone} is no longer a verified domain`),
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(arrived(subject)).toHaveLength(0);
  });

  it('answers 409 to a cancel that races the worker sending the message, which ends sent', async () => {
    const subject = `race ${unique()}`;
    const hold = sink.holdNext();
    const id = await send({ to: `kate-${unique()}@example.org`, subject, scheduleFor: new Date(Date.now() + 1500).toISOString() });
    try {
      // The worker took the message at its time and the provider has it; the cancel comes a moment too late.
      await hold.arrived;
      const cancel = await api.http.delete(`/email/scheduled/${id}`).set(bearer(adminKey)).expect(409);
      expect(cancel.body.error).toMatchObject({ code: 'CONFLICT', details: { status: 'queued' } });
    } finally {
      hold.release();
    }
    const sent = await waitForStatus(id, 'sent');
    expect(sent.events.map((e) => e.type)).toEqual(['queued', 'scheduled', 'sent']);
    expect(arrived(subject)).toHaveLength(1);
  });

  it('writes the outcome of a delivered message that PostgreSQL refused to record at first, without sending it again', async () => {
    const subject = `once ${unique()}`;
    const hold = sink.holdNext();
    const id = await send({ to: `liam-${unique()}@example.org`, subject });
    const db = new Client({ connectionString: api.env.DATABASE_URL });
    await db.connect();
    try {
      await hold.arrived;
      // The provider has the message; the row cannot be written until the table is back.
      await db.query('ALTER TABLE messages RENAME TO messages_away');
      hold.release();
      await sink.waitFor((m) => m.parsed?.subject === subject);
      await new Promise((resolve) => setTimeout(resolve, 1500));
      await db.query('ALTER TABLE messages_away RENAME TO messages');
    } finally {
      hold.release();
      await db.query('ALTER TABLE IF EXISTS messages_away RENAME TO messages').catch(() => undefined);
      await db.end();
    }
    const sent = await waitForStatus(id, 'sent');
    expect(sent.events[sent.events.length - 1].type).toBe('sent');
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(arrived(subject)).toHaveLength(1);
  });
});
