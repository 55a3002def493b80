import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { DataSource } from 'typeorm';
import { HeldNotificationReleases } from '../../src/forms/notification-releases/held-notification-releases';
import { SubmissionMail } from '../../src/forms/submissions/submission-mail';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount } from '../support/factories';
import { ReceivedMail, SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';
import { waitFor, waitForValue } from '../support/wait-for';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver';

interface Notification {
  status: string;
  detail: string | null;
  messageIds: string[];
  heldRecipients: { email: string; reason: string; since: string; source: string | null }[];
}

interface Submission {
  id: string;
  messageIds: string[];
  notification: Notification;
}

/**
 * An owner's notifications are never silently lost: a suppressed notification recipient holds the notification on
 * the submission (shown there, on the form, in a webhook event and a listing filter) until the suppression is lifted,
 * and a notification that bounces at delivery says so too. Real HTTP, a real SMTP server, a real webhook receiver.
 */
describe('form notifications', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let receiver: WebhookReceiver<Record<string, unknown>>;
  let owner: { accountId: string; adminKey: string };
  let hook: { id: string; secret: string };
  const unique = () => randomBytes(5).toString('hex');
  const domain = `${unique()}.notify.test`;

  beforeAll(async () => {
    sink = await startSmtpSink();
    receiver = await startWebhookReceiver();
    t = await createTestApp({
      env: {
        SMTP_URL: sink.url,
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
        WEBHOOK_POLL_INTERVAL_MS: '50',
        EMAIL_RETRY_FIRST_DELAY_MS: '1000',
      },
    });
    owner = await createAccount(t, 'Owner');
    await createVerifiedDomain(t, owner.accountId, domain);
    const registered = await t.http
      .post('/email/webhooks')
      .set(bearer(owner.adminKey))
      .send({ url: `${receiver.base}/notifications`, events: ['form.notification_failed'] });
    expect(registered.status).toBe(201);
    hook = registered.body;
  });

  afterAll(async () => {
    await t.close();
    await sink.close();
    await receiver.close();
  });

  async function createForm(to: string | string[], settings: Record<string, unknown> = {}, adminKey = owner.adminKey): Promise<string> {
    const res = await t.http
      .post('/api/forms')
      .set(bearer(adminKey))
      .send({ name: 'Contact', to, rateLimit: 1000, ...settings });
    expect(res.status).toBe(201);
    return res.body.id;
  }

  async function submit(formId: string, message: string, extra: Record<string, string> = {}, adminKey = owner.adminKey): Promise<string> {
    const res = await t.http
      .post(`/f/${formId}`)
      .set({ 'X-Api-Key': adminKey, Accept: 'application/json' })
      .send({ email: 'visitor@example.org', message, ...extra })
      .expect(200);
    expect(res.body.success).toBe(true);
    return res.body.submissionId;
  }

  async function submissions(formId: string, query = ''): Promise<Submission[]> {
    const res = await t.http.get(`/api/forms/${formId}/submissions${query}`).set(bearer(owner.adminKey)).expect(200);
    return res.body.submissions;
  }

  const submissionOf = async (formId: string, id: string) => (await submissions(formId)).find((s) => s.id === id)!;
  const notificationTo = (address: string, marker: string) => (mail: ReceivedMail) =>
    mail.envelope.rcptTo.includes(address) && (mail.parsed?.text ?? '').includes(marker);
  const hooksFor = (submissionId: string) => receiver.received.filter((h) => h.body.submissionId === submissionId);

  it('holds the notification of a suppressed owner, shows why everywhere, and sends it once the suppression is lifted', async () => {
    const address = `owner-${unique()}@acme.example`;
    const formId = await createForm(address);
    const deliveredMarker = unique();
    const delivered = await submit(formId, deliveredMarker);
    await sink.waitFor(notificationTo(address, deliveredMarker));

    await t.http.post('/email/suppression').set(bearer(owner.adminKey)).send({ email: address, reason: 'bounced' }).expect(201);
    const marker = unique();
    const held = await submit(formId, marker);

    // The submission says what happened instead of an empty messageIds.
    const stored = await submissionOf(formId, held);
    expect(stored.notification.status).toBe('held');
    expect(stored.notification.detail).toMatch(
      new RegExp(
        `^notification not sent: recipient ${address.replace('.', '\\.')} suppressed since \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z \\(bounced, by api\\)`,
      ),
    );
    expect(stored.notification.heldRecipients).toEqual([{ email: address, reason: 'bounced', since: expect.any(String), source: 'api' }]);
    expect((await submissionOf(formId, delivered)).notification).toMatchObject({ status: 'sent', detail: null });

    // The owner's webhook hears of it, signed like every event.
    const event = await waitForValue('the form.notification_failed webhook', () => hooksFor(held)[0]);
    expect(() => new Webhook(hook.secret).verify(event.raw, event.headers as Record<string, string>)).not.toThrow();
    expect(event.body).toMatchObject({
      type: 'form.notification_failed',
      formId,
      submissionId: held,
      reason: 'suppressed',
      recipient: address,
      detail: expect.stringContaining(`recipient ${address} suppressed since`),
    });

    // The listing finds every undelivered notification, and the form shows the suppressed recipient.
    expect((await submissions(formId, '?notification=undelivered')).map((s) => s.id)).toEqual([held]);
    const form = await t.http.get(`/api/forms/${formId}`).set(bearer(owner.adminKey)).expect(200);
    expect(form.body.suppressedRecipients).toEqual([{ email: address, reason: 'bounced', since: expect.any(String), source: 'api' }]);
    const listed = await t.http.get('/api/forms').set(bearer(owner.adminKey)).expect(200);
    expect(listed.body.forms.find((f: { id: string }) => f.id === formId).suppressedRecipients).toHaveLength(1);
    expect(sink.messages.filter(notificationTo(address, marker))).toEqual([]);

    // Lifting the suppression sends the held notification.
    await t.http
      .delete(`/email/suppression/${encodeURIComponent(address)}`)
      .set(bearer(owner.adminKey))
      .expect(200);
    const mail = await sink.waitFor(notificationTo(address, marker));
    expect(mail.envelope.rcptTo).toEqual([address]);
    const released = await waitFor(
      'the released notification to be sent',
      () => submissionOf(formId, held),
      (s) => s.notification.status === 'sent',
    );
    expect(released.notification.heldRecipients).toEqual([]);
    expect(released.messageIds).toEqual(expect.arrayContaining(released.notification.messageIds));
    expect(released.notification.messageIds).toHaveLength(1);
    expect(await submissions(formId, '?notification=undelivered')).toEqual([]);
    const after = await t.http.get(`/api/forms/${formId}`).set(bearer(owner.adminKey)).expect(200);
    expect(after.body.suppressedRecipients).toEqual([]);
  });

  it('sends a held notification whose suppression was lifted without the release being told (a process that died)', async () => {
    const address = `owner-${unique()}@acme.example`;
    const formId = await createForm(address);
    await t.http.post('/email/suppression').set(bearer(owner.adminKey)).send({ email: address }).expect(201);
    const marker = unique();
    const held = await submit(formId, marker);
    expect((await submissionOf(formId, held)).notification.status).toBe('held');

    // The entry goes as a DELETE would take it, but nobody hears of it: the workers' sweep finds it.
    await t.app.get(DataSource).query('DELETE FROM suppression_entries WHERE account_id = $1 AND email = $2', [owner.accountId, address]);
    await t.app.get(HeldNotificationReleases).release();
    await sink.waitFor(notificationTo(address, marker));
    await waitFor(
      'the swept notification to be sent',
      () => submissionOf(formId, held),
      (s) => s.notification.status === 'sent',
    );
  });

  it('holds a notification whose owner was suppressed while it waited for delivery, and sends it once lifted', async () => {
    const address = `owner-${unique()}@acme.example`;
    const formId = await createForm(address);
    sink.failNext(1, 451, '4.3.0 try again later');
    const marker = unique();
    const submissionId = await submit(formId, marker);
    await waitFor(
      'the notification to be deferred',
      () => submissionOf(formId, submissionId),
      (s) => s.notification.status === 'queued',
    );
    await t.http.post('/email/suppression').set(bearer(owner.adminKey)).send({ email: address, reason: 'complained' }).expect(201);

    const held = await waitFor(
      'the notification to be held',
      () => submissionOf(formId, submissionId),
      (s) => s.notification.status === 'held',
    );
    expect(held.notification.detail).toContain(`recipient ${address} suppressed since`);
    const event = await waitForValue('the webhook of the hold', () => hooksFor(submissionId).find((h) => h.body.reason === 'suppressed'));
    expect(event.body).toMatchObject({ type: 'form.notification_failed', recipient: address, messageId: held.notification.messageIds[0] });
    expect(hooksFor(submissionId)).toHaveLength(1);

    await t.http
      .delete(`/email/suppression/${encodeURIComponent(address)}`)
      .set(bearer(owner.adminKey))
      .expect(200);
    await sink.waitFor(notificationTo(address, marker));
    const sent = await waitFor(
      'the held notification to be sent',
      () => submissionOf(formId, submissionId),
      (s) => s.notification.status === 'sent',
    );
    expect(sent.notification.messageIds).toHaveLength(2);
  });

  it('shows a notification that bounced at delivery on the submission, in the filter and in a webhook event', async () => {
    const address = `owner-${unique()}@acme.example`;
    sink.rejectRecipient(address, 550, '5.1.1 mailbox unavailable');
    try {
      const formId = await createForm(address);
      const submissionId = await submit(formId, unique());
      const bounced = await waitFor(
        'the notification to bounce',
        () => submissionOf(formId, submissionId),
        (s) => s.notification.status === 'bounced',
      );
      expect(bounced.notification.detail).toContain(`notification to ${address} bounced`);
      expect(bounced.notification.detail).toContain('5.1.1 mailbox unavailable');
      expect((await submissions(formId, '?notification=undelivered')).map((s) => s.id)).toEqual([submissionId]);
      const event = await waitForValue('the bounce webhook', () => hooksFor(submissionId).find((h) => h.body.reason === 'bounced'));
      expect(event.body).toMatchObject({
        type: 'form.notification_failed',
        formId,
        recipient: address,
        messageId: bounced.notification.messageIds[0],
      });
    } finally {
      sink.clearRejections();
    }
  });

  const db = () => t.app.get(DataSource);
  const suppress = (email: string) =>
    t.http.post('/email/suppression').set(bearer(owner.adminKey)).send({ email, reason: 'bounced' }).expect(201);
  const lift = (email: string) =>
    t.http
      .delete(`/email/suppression/${encodeURIComponent(email)}`)
      .set(bearer(owner.adminKey))
      .expect(200);
  const mailsTo = (address: string, marker: string) => sink.messages.filter(notificationTo(address, marker)).length;
  /** Events as DeliveryService.record writes those of one attempt: all at one time. */
  const recordAttempt = (messageId: string, events: [type: string, recipient: string, detail: string][]) =>
    db().query(
      `INSERT INTO message_events (message_id, type, recipient, detail, occurred_at) ` +
        `SELECT $1, e ->> 0, e ->> 1, e ->> 2, now() FROM jsonb_array_elements($2::jsonb) e`,
      [messageId, JSON.stringify(events)],
    );

  it('announces and shows a recipient given up on in the attempt that found another recipient suppressed', async () => {
    const [held, other] = [`owner-${unique()}@acme.example`, `sales-${unique()}@acme.example`];
    const formId = await createForm([held, other]);
    const marker = unique();
    const submissionId = await submit(formId, marker);
    await sink.waitFor(notificationTo(other, marker));
    const [messageId] = (await submissionOf(formId, submissionId)).notification.messageIds;

    // A last attempt: `held` was put on the list while the message waited, `other` kept answering 451.
    await suppress(held);
    await recordAttempt(messageId, [
      ['suppressed', held, 'put on the suppression list after the message was accepted'],
      ['failed', other, 'gave up after 8 attempts: 451 4.2.1 Mailbox busy'],
    ]);
    const failure = await waitForValue('the webhook of the failure', () => hooksFor(submissionId).find((h) => h.body.reason === 'failed'));
    expect(failure.body).toMatchObject({ recipient: other, messageId, detail: 'gave up after 8 attempts: 451 4.2.1 Mailbox busy' });
    const heldAtDelivery = await waitForValue('the webhook of the hold', () =>
      hooksFor(submissionId).find((h) => h.body.reason === 'suppressed'),
    );
    expect((await submissions(formId, '?notification=undelivered')).map((s) => s.id)).toEqual([submissionId]);

    // An event of a hold at acceptance (written with the submission) has the keys of one the trigger writes.
    const later = await submit(formId, unique());
    const heldAtAcceptance = await waitForValue('the webhook of a hold at acceptance', () => hooksFor(later)[0]);
    expect(heldAtAcceptance.body).toMatchObject({ reason: 'suppressed', recipient: held, messageId: null });
    expect(Object.keys(heldAtAcceptance.body).sort()).toEqual(Object.keys(heldAtDelivery.body).sort());
    expect(Object.keys(failure.body).sort()).toEqual(Object.keys(heldAtDelivery.body).sort());

    // Once `held` gets it, the submission still tells that `other` never did.
    await lift(held);
    await waitFor(
      'the released notification',
      () => mailsTo(held, marker),
      (count) => count === 2,
    );
    const after = await waitFor(
      'the release to be recorded',
      () => submissionOf(formId, submissionId),
      (s) => s.notification.messageIds.length === 2,
    );
    expect(after.notification).toMatchObject({ status: 'failed', heldRecipients: [] });
    expect(after.notification.detail).toContain(`notification to ${other} failed`);
  });

  it('holds a recipient taken off the list between the delivery finding it suppressed and the hold, and the sweep sends it', async () => {
    const address = `owner-${unique()}@acme.example`;
    const formId = await createForm(address);
    const marker = unique();
    const submissionId = await submit(formId, marker);
    await sink.waitFor(notificationTo(address, marker));
    const [messageId] = (await submissionOf(formId, submissionId)).notification.messageIds;

    // The attempt found the address suppressed; its entry was deleted before the attempt was written.
    await recordAttempt(messageId, [['suppressed', address, 'put on the suppression list after the message was accepted']]);
    const held = await submissionOf(formId, submissionId);
    expect(held.notification.status).toBe('held');
    expect(held.notification.heldRecipients).toEqual([{ email: address, reason: 'lifted', since: expect.any(String), source: null }]);
    expect(held.notification.detail).toContain('taken off the suppression list as it was sent');
    const [{ count }] = await db().query(
      `SELECT count(*)::int AS count FROM event_outbox WHERE type = 'form.notification_failed' AND payload ->> 'submissionId' = $1`,
      [submissionId],
    );
    expect(count).toBe(0);

    await t.app.get(HeldNotificationReleases).release();
    await waitFor(
      'the held notification',
      () => mailsTo(address, marker),
      (n) => n === 2,
    );
    await waitFor(
      'the notification to be sent',
      () => submissionOf(formId, submissionId),
      (s) => s.notification.status === 'sent' && s.notification.messageIds.length === 2,
    );
  });

  it('releases the other held notifications when one cannot be released, and that one on a later run', async () => {
    const address = `owner-${unique()}@acme.example`;
    const formId = await createForm(address);
    await suppress(address);
    const [brokenMarker, fineMarker] = [unique(), unique()];
    const broken = await submit(formId, brokenMarker);
    await submit(formId, fineMarker);
    const mail = t.app.get(SubmissionMail);
    const notifyOwner = mail.notifyOwner.bind(mail);
    const spy = jest
      .spyOn(mail, 'notifyOwner')
      .mockImplementation((form, stored, recipients) =>
        stored.id === broken ? Promise.reject(new Error('the template broke')) : notifyOwner(form, stored, recipients),
      );
    try {
      await db().query('DELETE FROM suppression_entries WHERE account_id = $1 AND email = $2', [owner.accountId, address]);
      await t.app.get(HeldNotificationReleases).release();
      await sink.waitFor(notificationTo(address, fineMarker));
      expect((await submissionOf(formId, broken)).notification.status).toBe('held');
    } finally {
      spy.mockRestore();
    }
    await t.app.get(HeldNotificationReleases).release();
    await sink.waitFor(notificationTo(address, brokenMarker));
  });

  it('finds an accepted submission that has no notification message and nobody held: not sent', async () => {
    const address = `owner-${unique()}@acme.example`;
    const formId = await createForm(address);
    const submissionId = await submit(formId, unique());
    // As stored before notifications were held (or by a race): the notification went nowhere.
    await db().query(`UPDATE form_submissions SET message_ids = '[]', notification_message_ids = '[]' WHERE id = $1`, [submissionId]);
    expect((await submissionOf(formId, submissionId)).notification).toMatchObject({
      status: 'not_sent',
      detail: 'notification not sent: no notification message and no recipient held',
    });
    expect((await submissions(formId, '?notification=undelivered')).map((s) => s.id)).toEqual([submissionId]);
  });

  it('addresses an allowed copy (_cc) when every To recipient is suppressed', async () => {
    const [address, copy] = [`owner-${unique()}@acme.example`, `sales-${unique()}@acme.example`];
    const formId = await createForm(address, { ccAllowed: [copy] });
    await suppress(address);
    const marker = unique();
    const submissionId = await submit(formId, marker, { _cc: copy });
    const mail = await sink.waitFor(notificationTo(copy, marker));
    expect(mail.parsed!.to).toMatchObject({ value: [{ address: copy }] });
    expect(mail.parsed!.cc).toBeUndefined();
    expect((await submissionOf(formId, submissionId)).notification.heldRecipients.map((h) => h.email)).toEqual([address]);
  });

  it('writes no form.notification_failed event for an account no webhook of which subscribes to it', async () => {
    const quiet = await createAccount(t, 'Quiet');
    await createVerifiedDomain(t, quiet.accountId, `${unique()}.quiet.test`);
    const address = `owner-${unique()}@quiet.example`;
    const formId = await createForm(address, {}, quiet.adminKey);
    await t.http.post('/email/suppression').set(bearer(quiet.adminKey)).send({ email: address }).expect(201);
    const submissionId = await submit(formId, unique(), {}, quiet.adminKey);
    const res = await t.http.get(`/api/forms/${formId}/submissions`).set(bearer(quiet.adminKey)).expect(200);
    expect(res.body.submissions[0]).toMatchObject({ id: submissionId, notification: { status: 'held' } });
    const [{ count }] = await db().query(
      `SELECT count(*)::int AS count FROM event_outbox WHERE account_id = $1 AND type = 'form.notification_failed'`,
      [quiet.accountId],
    );
    expect(count).toBe(0);
  });

  it('refuses an unknown notification filter', async () => {
    const formId = await createForm(`owner-${unique()}@acme.example`);
    const res = await t.http.get(`/api/forms/${formId}/submissions?notification=lost`).set(bearer(owner.adminKey)).expect(400);
    expect(res.body.error.details.fields).toEqual([expect.objectContaining({ field: 'notification' })]);
  });
});
