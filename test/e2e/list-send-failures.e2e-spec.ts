import { randomBytes } from 'node:crypto';
import { getQueueToken } from '@nestjs/bull';
import type { Queue } from 'bull';
import { DataSource } from 'typeorm';
import { INTERNAL_FAILURE } from '../../src/email/list-sends/list-send-attempts';
import { ListSendQueue } from '../../src/email/list-sends/list-send.queue';
import { ListSendSweeper } from '../../src/email/list-sends/list-send.sweeper';
import { QueueName } from '../../src/queue/queue.constants';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount } from '../support/factories';
import { SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';
import { waitFor } from '../support/wait-for';

interface ListSendStatus {
  status: string;
  queued: number;
  refused: number;
  attempts: number;
  lastError: string | null;
  stoppedReason: string | null;
  completedAt: string | null;
}

interface BoardJob {
  id: string;
  failedReason?: string;
}

/**
 * A list send whose fan-out keeps failing (here a trigger of the test database refuses its messages past a given
 * address) ends `failed` after LIST_SEND_MAX_ATTEMPTS runs, counted over every job it has: GET says why, Bull Board
 * keeps its job in the failed set with the error, what it counted and did not make is given back, the messages it
 * made are sent, and the sweeper leaves it alone. The periodic sweeps are far apart: the tests run them.
 */
describe('failing list sends', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let accountId: string;
  let adminKey: string;
  const domain = 'failing-lists.acme.test';
  const unique = () => randomBytes(4).toString('hex');
  const maxAttempts = 3;

  beforeAll(async () => {
    sink = await startSmtpSink();
    t = await createTestApp({
      env: {
        SMTP_URL: sink.url,
        QUOTAS_ENABLED: 'true',
        LIST_SEND_BATCH_SIZE: '2',
        LIST_SEND_MAX_ATTEMPTS: String(maxAttempts),
        LIST_SEND_RETRY_FIRST_DELAY_MS: '1000',
        EMAIL_SWEEP_INTERVAL_MS: '600000',
      },
    });
    ({ accountId, adminKey } = await createAccount(t, 'Failing lists'));
    await createVerifiedDomain(t, accountId, domain);
    await t.http
      .patch(`/admin/accounts/${accountId}`)
      .set(bearer(t.operatorKey))
      .send({ tier: 'enterprise', quotas: { emails_per_month: 1000 } })
      .expect(200);
    await db().query(
      `CREATE FUNCTION refuse_list_message() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN RAISE EXCEPTION 'refused by the test: %', NEW.recipients->>0; END $$`,
    );
  });

  afterAll(async () => {
    await t.close();
    await sink.close();
  });

  const db = () => t.app.get(DataSource);
  const queue = () => t.app.get<Queue>(getQueueToken(QueueName.ListSends));

  /** A list of `count` subscribers whose messages past the `allowed` first ones the database refuses. */
  async function failingList(count: number, allowed: number): Promise<{ listId: string; emails: string[] }> {
    const prefix = unique();
    const emails = Array.from({ length: count }, (_, i) => `${prefix}${i}@example.org`);
    const listId: string = (
      await t.http
        .post('/email/lists')
        .set(bearer(adminKey))
        .send({ name: `list ${prefix}` })
        .expect(201)
    ).body.id;
    await t.http
      .post(`/email/lists/${listId}/subscribers`)
      .set(bearer(adminKey))
      .send(emails.map((email) => ({ email })))
      .expect(200);
    // Identifiers from our own ids and addresses: letters, digits and '_' only.
    await db().query(
      `CREATE TRIGGER refuse_${listId} BEFORE INSERT ON messages FOR EACH ROW
       WHEN (NEW.list_id = '${listId}' AND NEW.recipients->>0 > '${emails[allowed - 1] ?? ''}') EXECUTE FUNCTION refuse_list_message()`,
    );
    return { listId, emails };
  }

  const sendToList = async (listId: string, subject: string): Promise<string> => {
    const res = await t.http
      .post('/email/send')
      .set(bearer(adminKey))
      .send({ from: `news@${domain}`, list: listId, subject, text: 'Hello {{email}}' })
      .expect(200);
    return res.body.listSendId;
  };
  const listSend = async (listId: string, listSendId: string): Promise<ListSendStatus> =>
    (await t.http.get(`/email/lists/${listId}/sends/${listSendId}`).set(bearer(adminKey)).expect(200)).body;
  const emailsUsed = async (): Promise<number> =>
    (await t.http.get('/settings').set(bearer(adminKey)).expect(200)).body.quotas.emails_per_month.used;
  const failedOnBoard = async (): Promise<BoardJob[]> => {
    const res = await t.http
      .get('/admin/queues/api/queues')
      .query({ activeQueue: QueueName.ListSends, status: 'failed', page: 1 })
      .auth('ops', t.operatorKey)
      .expect(200);
    return res.body.queues.find((q: { name: QueueName }) => q.name === QueueName.ListSends).jobs;
  };
  /** As the sweeper would find it an hour later. */
  const age = (listSendId: string) =>
    db().query(`UPDATE list_sends SET updated_at = now() - interval '1 hour' WHERE id = $1`, [listSendId]);
  /** Its first run failed; Redis then loses the job while it waits for its retry. */
  const loseJobAfterFirstRun = async (listId: string, listSendId: string): Promise<void> => {
    await waitFor(
      `the first run of ${listSendId} failed, its job waiting to retry`,
      async () => ({ send: await listSend(listId, listSendId), state: await (await queue().getJob(listSendId))?.getState() }),
      ({ send, state }) => send.attempts === 1 && send.lastError !== null && state === 'delayed',
    );
    await (await queue().getJob(listSendId))!.remove();
  };
  /** Its runs used up its attempts without ending it: each died with its worker after counting itself. */
  const spend = (listSendId: string) => db().query('UPDATE list_sends SET attempts = $2 WHERE id = $1', [listSendId, maxAttempts]);

  it('fails a list send after its attempts, says why, keeps what it made and gives back the rest; the sweeper leaves it', async () => {
    const { listId, emails } = await failingList(6, 2);
    const subject = `failing ${unique()}`;
    const usedBefore = await emailsUsed();
    const listSendId = await sendToList(listId, subject);
    expect(await emailsUsed()).toBe(usedBefore + 6);

    const failed = await waitFor(
      `list send ${listSendId} failed`,
      () => listSend(listId, listSendId),
      (s) => s.status === 'failed',
      30_000,
    );
    expect(failed).toMatchObject({
      status: 'failed',
      queued: 2,
      refused: 4,
      attempts: maxAttempts,
      lastError: `gave up after ${maxAttempts} attempts: ${INTERNAL_FAILURE}`,
      stoppedReason: null,
      completedAt: expect.any(String),
    });
    // The first page committed before the failures: its messages are sent; the 4 never made are given back.
    const arrived = await waitFor(
      'the first page at the SMTP sink',
      () => sink.messages.filter((m) => m.parsed?.subject === subject),
      (mails) => mails.length >= 2,
    );
    expect(arrived.map((m) => m.envelope.rcptTo[0]).sort()).toEqual(emails.slice(0, 2));
    expect(await emailsUsed()).toBe(usedBefore + 2);

    // Bull Board shows its job failed, with the database's refusal, after the attempts.
    const onBoard = (await failedOnBoard()).find((job) => job.id === listSendId);
    expect(onBoard?.failedReason).toBe(`List send ${listSendId} failed after ${maxAttempts} attempts: refused by the test: ${emails[2]}`);

    // An hour later the sweeper does not add it again.
    await age(listSendId);
    await t.app.get(ListSendSweeper).sweep();
    const job = await queue().getJob(listSendId);
    expect(await job!.getState()).toBe('failed');
    expect(job!.attemptsMade).toBe(maxAttempts);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await listSend(listId, listSendId)).toMatchObject({ status: 'failed', attempts: maxAttempts, queued: 2 });
    expect(sink.messages.filter((m) => m.parsed?.subject === subject)).toHaveLength(2);
    expect(await emailsUsed()).toBe(usedBefore + 2);
  });

  it('counts the attempts over the jobs the sweeper adds again: a lost job does not start them over', async () => {
    const { listId } = await failingList(3, 0);
    const listSendId = await sendToList(listId, `lost ${unique()}`);

    await loseJobAfterFirstRun(listId, listSendId);
    expect(await listSend(listId, listSendId)).toMatchObject({
      status: 'queued',
      attempts: 1,
      lastError: INTERNAL_FAILURE,
    });

    await age(listSendId);
    await t.app.get(ListSendSweeper).sweep();
    const requeued = await queue().getJob(listSendId);
    expect(requeued!.opts.attempts).toBe(maxAttempts - 1);

    const failed = await waitFor(
      `list send ${listSendId} failed`,
      () => listSend(listId, listSendId),
      (s) => s.status === 'failed',
      30_000,
    );
    expect(failed).toMatchObject({ queued: 0, refused: 3, attempts: maxAttempts });
    const job = await queue().getJob(listSendId);
    expect(await job!.getState()).toBe('failed');
    expect(job!.attemptsMade).toBe(maxAttempts - 1);
  });

  it('fails a send whose runs used up its attempts without ending it: the sweeper, instead of adding its job again', async () => {
    const { listId } = await failingList(3, 0);
    const usedBefore = await emailsUsed();
    const listSendId = await sendToList(listId, `spent ${unique()}`);
    await loseJobAfterFirstRun(listId, listSendId);
    await spend(listSendId);

    await age(listSendId);
    await t.app.get(ListSendSweeper).sweep();
    expect(await listSend(listId, listSendId)).toMatchObject({
      status: 'failed',
      queued: 0,
      refused: 3,
      attempts: maxAttempts,
      lastError: `gave up after ${maxAttempts} attempts: ${INTERNAL_FAILURE}`,
      completedAt: expect.any(String),
    });
    expect(await queue().getJob(listSendId)).toBeNull();
    // The 3 counted at acceptance and never made are given back.
    expect(await emailsUsed()).toBe(usedBefore);
  });

  it('fails, before any fan-out, a send whose job runs after its attempts were used up', async () => {
    const { listId } = await failingList(3, 0);
    const usedBefore = await emailsUsed();
    const listSendId = await sendToList(listId, `spent job ${unique()}`);
    await loseJobAfterFirstRun(listId, listSendId);
    await spend(listSendId);

    // A job added all the same (by hand from Bull Board, or by a sweeper that found it before its last run counted).
    expect(await t.app.get(ListSendQueue).add(listSendId)).toBe(true);
    const { send, job } = await waitFor(
      `list send ${listSendId} failed, its job too`,
      async () => {
        const job = await queue().getJob(listSendId);
        const state = await job?.getState();
        return {
          send: await listSend(listId, listSendId),
          job: { state, attemptsMade: job?.attemptsMade, failedReason: job?.failedReason },
        };
      },
      ({ send, job }) => send.status === 'failed' && job.state === 'failed',
    );
    const reason = `gave up after ${maxAttempts} attempts: ${INTERNAL_FAILURE}`;
    expect(send).toMatchObject({ queued: 0, refused: 3, attempts: maxAttempts, lastError: reason });
    // Failed at its first run, whatever attempts Bull had left for it.
    expect(job).toEqual({ state: 'failed', attemptsMade: 1, failedReason: `List send ${listSendId} failed: ${reason}` });
    expect(await emailsUsed()).toBe(usedBefore);
  });
});
