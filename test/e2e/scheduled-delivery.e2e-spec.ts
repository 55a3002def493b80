import { randomBytes } from 'node:crypto';
import { getQueueToken } from '@nestjs/bull';
import type { Queue } from 'bull';
import { JobName, QueueName } from '../../src/queue/queue.constants';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount } from '../support/factories';
import { SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';
import { waitFor } from '../support/wait-for';

interface Status {
  status: string;
  events: { type: string }[];
}

// A scheduled message leaves at its time whatever is done to its queue job: promoted or re-added early by
// hand (Bull Board), the job goes back to wait. The retry schedule is shrunk and the sweeper runs often, so
// that neither can be what holds the message back.
describe('scheduled delivery', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let adminKey: string;
  const domain = 'scheduled.acme.test';
  const unique = () => randomBytes(4).toString('hex');

  beforeAll(async () => {
    sink = await startSmtpSink();
    t = await createTestApp({
      env: { SMTP_URL: sink.url, EMAIL_RETRY_FIRST_DELAY_MS: '1', EMAIL_SWEEP_INTERVAL_MS: '300', EMAIL_SWEEP_AFTER_MS: '500' },
    });
    const account = await createAccount(t, 'Scheduler');
    adminKey = account.adminKey;
    await createVerifiedDomain(t, account.accountId, domain);
  });

  afterAll(async () => {
    await t.close();
    await sink.close();
  });

  const queue = () => t.app.get<Queue>(getQueueToken(QueueName.Email));
  const schedule = async (subject: string, scheduleFor: Date): Promise<string> => {
    const res = await t.http
      .post('/v1/send')
      .set(bearer(adminKey))
      .send({ from: `hello@${domain}`, to: 'ada@example.org', subject, text: 'x', scheduleFor: scheduleFor.toISOString() })
      .expect(200);
    expect(res.body.status).toBe('scheduled');
    return res.body.messageId;
  };
  const statusOf = async (messageId: string): Promise<Status> =>
    (await t.http.get(`/email/status/${messageId}`).set(bearer(adminKey)).expect(200)).body;
  const arrived = (subject: string) => sink.messages.filter((m) => m.parsed?.subject === subject);
  const jobState = async (messageId: string) => (await queue().getJob(messageId))?.getState();
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  /** When the job's delay ends (Bull keeps the time × 4096 as its score in the delayed set). */
  const delayedUntil = async (messageId: string) =>
    Math.floor(Number(await queue().client.zscore(queue().toKey('delayed'), messageId)) / 0x1000);

  it('keeps a message scheduled for an hour waiting when its job is promoted in Bull', async () => {
    const subject = `promoted ${unique()}`;
    const scheduledFor = new Date(Date.now() + 3600_000);
    const id = await schedule(subject, scheduledFor);
    const job = await queue().getJob(id);
    expect(await job!.getState()).toBe('delayed');

    await job!.promote();
    await waitFor(
      `the job of ${id} delayed again`,
      () => jobState(id),
      (state) => state === 'delayed',
    );
    await sleep(3000);

    expect(arrived(subject)).toHaveLength(0);
    const status = await statusOf(id);
    expect(status.status).toBe('scheduled');
    expect(status.events.map((e) => e.type)).toEqual(['queued', 'scheduled']);
    const again = await queue().getJob(id);
    expect(await again!.getState()).toBe('delayed');
    expect(again!.attemptsMade).toBe(0);
    expect(Math.abs((await delayedUntil(id)) - scheduledFor.getTime())).toBeLessThan(1000);
  });

  it('holds a job re-added without its delay, as by hand, and keeps a cancelled message cancelled', async () => {
    const subject = `re-added ${unique()}`;
    const scheduledFor = new Date(Date.now() + 3600_000);
    const id = await schedule(subject, scheduledFor);
    await (await queue().getJob(id))!.remove();
    await queue().add(JobName.DeliverEmail, { messageId: id }, { jobId: id });
    await waitFor(
      `the job of ${id} delayed`,
      () => jobState(id),
      (state) => state === 'delayed',
    );
    expect(Math.abs((await delayedUntil(id)) - scheduledFor.getTime())).toBeLessThan(1000);

    await (await queue().getJob(id))!.promote();
    const cancelled = await t.http.delete(`/email/scheduled/${id}`).set(bearer(adminKey)).expect(200);
    expect(cancelled.body.status).toBe('cancelled');
    await sleep(1500);
    expect(arrived(subject)).toHaveLength(0);
    expect((await statusOf(id)).events.map((e) => e.type)).toEqual(['queued', 'scheduled', 'cancelled']);
  });

  it('sends a message scheduled 3 s ahead once, after its time, though its job was promoted at once', async () => {
    const subject = `soon ${unique()}`;
    const scheduledFor = new Date(Date.now() + 3000);
    const id = await schedule(subject, scheduledFor);
    await (await queue().getJob(id))!.promote();

    const mail = await sink.waitFor((m) => m.parsed?.subject === subject, 15_000);
    expect(mail.receivedAt).toBeGreaterThanOrEqual(scheduledFor.getTime());
    const sent = await waitFor(
      `${id} sent`,
      () => statusOf(id),
      (s) => s.status === 'sent',
    );
    expect(sent.events.map((e) => e.type)).toEqual(['queued', 'scheduled', 'sent']);
    await sleep(500);
    expect(arrived(subject)).toHaveLength(1);
  });
});
