import { randomBytes } from 'node:crypto';
import { getQueueToken } from '@nestjs/bull';
import type { Queue } from 'bull';
import { DataSource } from 'typeorm';
import { EmailSweeper } from '../../src/email/email.sweeper';
import { QueueName } from '../../src/queue/queue.constants';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount } from '../support/factories';
import { SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';
import { waitFor } from '../support/wait-for';

// APP_ROLE split and the shared pacer: an API-only instance queues, worker instances deliver, and two
// workers together stay under SMTP_MAX_RATE recipients a second.
describe('email workers', () => {
  let api: TestApp;
  const workers: TestApp[] = [];
  let sink: SmtpSink;
  let adminKey: string;
  const domain = 'workers.acme.test';
  const rate = 4;

  beforeAll(async () => {
    sink = await startSmtpSink();
    api = await createTestApp({ env: { APP_ROLE: 'api' } });
    const account = await createAccount(api);
    adminKey = account.adminKey;
    await createVerifiedDomain(api, account.accountId, domain);
  });

  afterAll(async () => {
    for (const worker of workers) await worker.close();
    await api.close();
    await sink.close();
  });

  const startWorker = async () => {
    workers.push(
      await createTestApp({
        shareWith: api,
        // The whole D-20 schedule (24 h) shrinks to about 9 s.
        env: { APP_ROLE: 'worker', SMTP_URL: sink.url, SMTP_MAX_RATE: String(rate), EMAIL_RETRY_FIRST_DELAY_MS: '1' },
      }),
    );
  };
  const send = (subject: string) =>
    api.http
      .post('/email/send')
      .set(bearer(adminKey))
      .send({ from: `hello@${domain}`, to: 'ada@example.org', subject, text: 'x' })
      .expect(200);

  it('queues on an API-only instance and delivers from a worker instance', async () => {
    const subject = `role ${randomBytes(4).toString('hex')}`;
    const res = await send(subject);
    const queue = await api.http.get(`/email/status/${res.body.messageId}`).set(bearer(adminKey)).expect(200);
    expect(queue.body.status).toBe('queued');
    expect(sink.count).toBe(0);

    await startWorker();
    await sink.waitFor((m) => m.parsed?.subject === subject);
  });

  it('never hands the provider more than SMTP_MAX_RATE emails a second, across workers', async () => {
    await startWorker();
    const batch = randomBytes(4).toString('hex');
    const subjects = Array.from({ length: 2 * rate + 1 }, (_, i) => `paced ${batch} ${i}`);
    await Promise.all(subjects.map(send));
    const mails = await Promise.all(subjects.map((s) => sink.waitFor((m) => m.parsed?.subject === s)));
    const times = mails.map((m) => m.receivedAt).sort((a, b) => a - b);
    // Any `rate + 1` consecutive emails span a second at the pacer; arrival times add the jitter of SMTP
    // (a worker's first email also opens its connection), hence the margin. Unpaced, all arrive at once.
    for (let i = 0; i + rate < times.length; i++) expect(times[i + rate] - times[i]).toBeGreaterThanOrEqual(750);
    expect(times[times.length - 1] - times[0]).toBeGreaterThanOrEqual(1750);
  });

  it('counts recipients, not messages, against SMTP_MAX_RATE, and still sends a message with more recipients than that', async () => {
    const batch = randomBytes(4).toString('hex');
    const recipients = (subject: string, count: number) =>
      Array.from({ length: count }, (_, i) => `r${i}.${subject.replace(/\W/g, '')}@example.org`);
    // Three messages of 3 recipients and one of 6 (> the rate of 4, so it takes a whole second): no two fit one second.
    const messages = [
      ...[0, 1, 2].map((i) => ({ subject: `recipients ${batch} ${i}`, count: 3 })),
      { subject: `recipients ${batch} big`, count: 6 },
    ];
    await Promise.all(
      messages.map(({ subject, count }) =>
        api.http
          .post('/email/send')
          .set(bearer(adminKey))
          .send({ from: `hello@${domain}`, to: recipients(subject, count), subject, text: 'x' })
          .expect(200),
      ),
    );
    const mails = await Promise.all(messages.map(({ subject }) => sink.waitFor((m) => m.parsed?.subject === subject)));
    expect(mails[3].envelope.rcptTo).toHaveLength(6);
    const times = mails.map((m) => m.receivedAt).sort((a, b) => a - b);
    // Counting messages, all four fit the first second; counting recipients, each needs a second of its own.
    for (let i = 0; i + 1 < times.length; i++) expect(times[i + 1] - times[i]).toBeGreaterThanOrEqual(750);
  });

  it('fails a message the provider keeps deferring once the retry schedule is used up', async () => {
    const attempts = 29; // 1 + the D-20 retries within 24 h
    sink.failNext(attempts, 451);
    const subject = `always deferred ${randomBytes(4).toString('hex')}`;
    const res = await send(subject);
    let status: { status: string; events: { type: string; detail?: string }[] } = { status: 'queued', events: [] };
    for (let i = 0; i < 300 && status.status !== 'failed'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      status = (await api.http.get(`/email/status/${res.body.messageId}`).set(bearer(adminKey)).expect(200)).body;
    }
    expect(status.status).toBe('failed');
    const types = status.events.map((e) => e.type);
    expect(types.filter((t) => t === 'deferred')).toHaveLength(attempts - 1);
    expect(types[types.length - 1]).toBe('failed');
    expect(status.events[status.events.length - 1].detail).toContain(`after ${attempts} attempts`);
    expect(sink.messages.some((m) => m.parsed?.subject === subject)).toBe(false);
  });

  it('keeps the attempts and the next attempt time of a deferred message whose job the sweeper re-adds', async () => {
    const attempts = 29;
    sink.failNext(attempts, 451);
    const subject = `job lost ${randomBytes(4).toString('hex')}`;
    const id: string = (await send(subject)).body.messageId;
    const queue = workers[0].app.get<Queue>(getQueueToken(QueueName.Email));
    const row = async () =>
      (await api.app.get(DataSource).query('SELECT status, attempts, next_attempt_at FROM messages WHERE id = $1', [id]))[0] as {
        status: string;
        attempts: number;
        next_attempt_at: Date | null;
      };

    // Deferred 6 times, its job waiting for the 7th attempt: Redis loses the job.
    let attemptsMade: number | undefined;
    while (attemptsMade === undefined) {
      const { message } = await waitFor(
        `${id} deferred 6 times, its job waiting`,
        async () => ({ message: await row(), state: await (await queue.getJob(id))?.getState() }),
        ({ message, state }) => message.status === 'deferred' && message.attempts >= 6 && state === 'delayed',
      );
      // Taken between the read and the removal, the job is left to run: the next delay is tried.
      const removed = await (
        await queue.getJob(id)
      )
        ?.remove()
        .then(() => true)
        .catch(() => false);
      if (removed && (await row()).attempts === message.attempts) attemptsMade = message.attempts;
    }
    expect(await queue.getJob(id)).toBeNull();
    // Its next attempt due 3 s from now, in the clock of the worker that runs the job and dates the events.
    const nextAttemptAt = new Date(Date.now() + 3000);
    await api.app.get(DataSource).query('UPDATE messages SET next_attempt_at = $2 WHERE id = $1', [id, nextAttemptAt]);

    const sweptFrom = Date.now();
    await workers[0].app.get(EmailSweeper).sweep(new Date());
    const job = (await queue.getJob(id))!;
    // Its job waits until that time: the delay runs to nextAttemptAt from a moment of the sweep, no later than the
    // job's own timestamp (without the fix it is 0, and the job due at once). It has the attempts left of the 29.
    const delayFrom = nextAttemptAt.getTime() - (job.opts.delay ?? 0);
    expect(delayFrom).toBeGreaterThanOrEqual(sweptFrom);
    expect(delayFrom).toBeLessThanOrEqual(job.timestamp);
    expect(job.opts.attempts).toBe(attempts - attemptsMade);

    let status: { status: string; events: { type: string; timestamp: string; detail?: string }[] } = { status: 'deferred', events: [] };
    for (let i = 0; i < 300 && status.status !== 'failed'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      status = (await api.http.get(`/email/status/${id}`).set(bearer(adminKey)).expect(200)).body;
    }
    // The attempt after the loss came no sooner than it was due; the message failed after 29 attempts in all.
    const deferred = status.events.filter((e) => e.type === 'deferred');
    expect(Date.parse(deferred[attemptsMade].timestamp)).toBeGreaterThanOrEqual(nextAttemptAt.getTime());
    expect(status.status).toBe('failed');
    expect(deferred).toHaveLength(attempts - 1);
    expect(status.events[status.events.length - 1].detail).toContain(`after ${attempts} attempts`);
    expect(await row()).toMatchObject({ status: 'failed', attempts, next_attempt_at: null });
    expect(sink.messages.some((m) => m.parsed?.subject === subject)).toBe(false);
  });
});
