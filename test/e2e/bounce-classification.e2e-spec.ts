import { randomBytes } from 'node:crypto';
import { Logger } from '@nestjs/common';
import nodemailer, { type Transporter } from 'nodemailer';
import { deliveryStatusReport } from '../support/delivery-status-report';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount } from '../support/factories';
import { freePort } from '../support/free-port';
import { SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';
import { waitFor } from '../support/wait-for';
import { postProviderEvents, providerSigner } from '../support/provider-events';

interface Status {
  status: string;
  events: { type: string; recipient?: string; detail?: string }[];
}

const SECRET = 'bounce-classification-secret';

/**
 * Which permanent failures put an address on the account's suppression list (RFC 3463): only those about the address
 * itself (5.1.1, 5.1.2, 5.1.3, 5.1.10, 5.2.1; a bare 550/551/553). A refusal by policy or of the content (5.7.x), as
 * Gmail answers mail with an .exe in a zip, fails the recipient for that message only, whether it comes as the answer
 * to RCPT TO, as a DSN to the message's return path, or as a provider's event. Real SMTP on both sides.
 */
describe('bounces: only a failure of the address suppresses it', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let adminKey: string;
  let client: Transporter;
  const domain = 'bounces.acme.test';
  const unique = () => randomBytes(4).toString('hex');
  const provider = providerSigner(SECRET);

  beforeAll(async () => {
    sink = await startSmtpSink();
    const port = await freePort();
    t = await createTestApp({
      env: {
        SMTP_URL: sink.url,
        INBOUND_SMTP_PORT: String(port),
        INBOUND_SMTP_HOST: '127.0.0.1',
        PROVIDER_WEBHOOK_SECRET: SECRET,
        EMAIL_RETRY_FIRST_DELAY_MS: '50',
      },
    });
    let accountId: string;
    ({ accountId, adminKey } = await createAccount(t, 'Bounces'));
    await createVerifiedDomain(t, accountId, domain);
    client = nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true });
  });

  afterAll(async () => {
    client?.close();
    await t?.close();
    await sink?.close();
  });

  const send = async (to: string, subject = `bounce ${unique()}`) => {
    const res = await t.http
      .post('/email/send')
      .set(bearer(adminKey))
      .send({ from: `hello@${domain}`, to, subject, text: 'hi' })
      .expect(200);
    return { messageId: res.body.messageId as string, subject, body: res.body as Record<string, unknown> };
  };
  const statusOf = async (messageId: string): Promise<Status> =>
    (await t.http.get(`/email/status/${messageId}`).set(bearer(adminKey)).expect(200)).body;
  const waitForStatus = (messageId: string, wanted: string) =>
    waitFor(
      `${messageId} → ${wanted}`,
      () => statusOf(messageId),
      (s) => s.status === wanted,
    );
  const waitForEvent = (messageId: string, type: string) =>
    waitFor(
      `a ${type} event of ${messageId}`,
      () => statusOf(messageId),
      (s) => s.events.some((e) => e.type === type),
    );
  const suppression = async (email: string) =>
    (await t.http.get('/email/suppression/check').query({ email }).set(bearer(adminKey)).expect(200)).body as {
      suppressed: boolean;
      reason?: string;
    };
  const errorLogs = (errors: jest.SpyInstance, messageId: string) =>
    errors.mock.calls.map(([line]) => String(line)).filter((line) => line.includes(messageId));
  /** The worker logs the refusal where it would have suppressed the address: after it, the list is as it stays. */
  const refusalLogged = (errors: jest.SpyInstance, messageId: string, timeoutMs = 5_000) =>
    waitFor(
      `the refusal of ${messageId} logged`,
      () => errorLogs(errors, messageId),
      (lines) => lines.length > 0,
      timeoutMs,
    );

  describe('answers to RCPT TO', () => {
    it('fails but does not suppress a recipient the relay refuses (550 5.7.1), shows the provider unhealthy, logs it once', async () => {
      const to = `owner-${unique()}@example.org`;
      sink.rejectRecipient(to, 550, '5.7.1 <' + to + '>: Relaying denied');
      const errors = jest.spyOn(Logger.prototype, 'error');
      try {
        const { messageId } = await send(to);
        const failed = await waitForStatus(messageId, 'failed');
        expect(failed.events).toContainEqual(
          expect.objectContaining({ type: 'failed', recipient: to, detail: expect.stringContaining('550 5.7.1') }),
        );
        expect(failed.events.filter((e) => e.type === 'bounced')).toEqual([]);
        await refusalLogged(errors, messageId);
        const health = await t.http.get('/health/ready');
        expect(health.status).toBe(503);
        expect(health.body.details.provider).toMatchObject({ status: 'down', reason: expect.stringContaining('550 5.7.1') });
        // /health/ready is public: the provider's answer without the recipient (the error log has it whole).
        expect(JSON.stringify(health.body)).not.toContain(to);
        expect(JSON.stringify(health.body)).not.toContain('@');
        expect(await suppression(to)).toMatchObject({ suppressed: false });
        const list = (await t.http.get('/email/suppression').set(bearer(adminKey)).expect(200)).body;
        expect(JSON.stringify(list)).not.toContain(to);
        expect(errorLogs(errors, messageId)).toEqual([expect.stringContaining('550 5.7.1')]);
      } finally {
        errors.mockRestore();
        sink.clearRejections();
      }

      // The relay fixed, the next message to the address goes out.
      const next = await send(to);
      expect(next.body).not.toHaveProperty('suppressed');
      await waitForStatus(next.messageId, 'sent');
      expect(sink.messages.filter((m) => m.parsed?.subject === next.subject)).toHaveLength(1);
      await waitFor(
        'the provider healthy again',
        async () => (await t.http.get('/health/ready')).body.details?.provider?.status,
        (state) => state === 'up',
      );
    });

    it('leaves the provider up when it refuses one recipient by policy and takes the others', async () => {
      const taken = `taken-${unique()}@example.org`;
      const refused = `policy-${unique()}@example.org`;
      const up = async () => (await t.http.get('/health/ready')).body.details?.provider?.status;
      await waitFor('the provider up', up, (state) => state === 'up');
      sink.rejectRecipient(refused, 550, `5.7.1 <${refused}>: Relaying denied`);
      const errors = jest.spyOn(Logger.prototype, 'error');
      try {
        const res = await t.http
          .post('/email/send')
          .set(bearer(adminKey))
          .send({ from: `hello@${domain}`, to: [taken, refused], subject: `mixed ${unique()}`, text: 'hi' })
          .expect(200);
        const messageId = res.body.messageId as string;
        const sent = await waitForStatus(messageId, 'sent');
        expect(sent.events).toContainEqual(expect.objectContaining({ type: 'failed', recipient: refused }));
        await refusalLogged(errors, messageId);
        // Logged with its message only: one policy refusal among accepted recipients does not make every instance unready.
        expect(await up()).toBe('up');
        expect(errors.mock.calls.filter(([line]) => /SMTP provider is failing/.test(String(line)))).toEqual([]);
        expect(await suppression(refused)).toMatchObject({ suppressed: false });
      } finally {
        errors.mockRestore();
        sink.clearRejections();
      }
    });

    it.each([
      ['550 5.1.1 no such user', 550, '5.1.1 <%s>: Recipient address rejected: no such user'],
      ['a bare 550 without an enhanced code', 550, 'No such user here'],
    ])('bounces and suppresses a recipient whose address does not exist (%s)', async (_label, code, text) => {
      const to = `gone-${unique()}@example.org`;
      sink.rejectRecipient(to, code, text.replace('%s', to));
      try {
        const { messageId } = await send(to);
        await waitForStatus(messageId, 'bounced');
        await waitFor(
          'the address suppressed',
          () => suppression(to),
          (s) => s.suppressed,
        );
        expect(await suppression(to)).toMatchObject({ suppressed: true, reason: 'bounced' });
      } finally {
        sink.clearRejections();
      }
      const later = await t.http
        .post('/email/send')
        .set(bearer(adminKey))
        .send({ from: `hello@${domain}`, to, subject: 'x', text: 'x' });
      expect(later.status).toBe(422);
      expect(later.body.error.code).toBe('ALL_RECIPIENTS_SUPPRESSED');
    });

    it('does not suppress a full mailbox (552 5.2.2) either', async () => {
      const to = `full-${unique()}@example.org`;
      sink.rejectRecipient(to, 552, '5.2.2 Mailbox full');
      const errors = jest.spyOn(Logger.prototype, 'error');
      try {
        const { messageId } = await send(to);
        await waitForStatus(messageId, 'bounced');
        await refusalLogged(errors, messageId);
        expect(await suppression(to)).toMatchObject({ suppressed: false });
      } finally {
        errors.mockRestore();
        sink.clearRejections();
      }
    });
  });

  describe('delivery status notifications to the return path', () => {
    /** A message the relay took: its id, return path and Message-ID. */
    const relayed = async (to: string) => {
      const { messageId, subject } = await send(to);
      const outgoing = await sink.waitFor((m) => m.parsed?.subject === subject);
      await waitForStatus(messageId, 'sent');
      return { messageId, returnPath: outgoing.envelope.mailFrom, headerMessageId: outgoing.parsed!.messageId! };
    };
    const dsn = (returnPath: string, headerMessageId: string, recipient: string, status: string, diagnostic: string[]) =>
      deliveryStatusReport({
        to: returnPath,
        recipient,
        status,
        diagnostic,
        originalHeaders: [`Message-ID: ${headerMessageId}`],
        reportingDomain: 'relay.example',
      });

    it('records a 5.7.0 content refusal (Gmail, an .exe in a zip) as a bounce without suppressing the owner', async () => {
      const to = `owner-${unique()}@example.org`;
      const { messageId, returnPath, headerMessageId } = await relayed(to);
      const diagnostic = [
        '552-5.7.0 This message was blocked because its content presents a potential',
        '552-5.7.0 security issue. To review our message content and attachment content',
        '552 5.7.0 guidelines, go to https://support.google.com/mail/?p=BlockedMessage - gsmtp',
      ];
      await client.sendMail({ envelope: { from: '', to: [returnPath] }, raw: dsn(returnPath, headerMessageId, to, '5.7.0', diagnostic) });

      const status = await waitForStatus(messageId, 'bounced');
      expect(status.events).toContainEqual(
        expect.objectContaining({ type: 'bounced', recipient: to, detail: expect.stringContaining('5.7.0 This message was blocked') }),
      );
      expect(await suppression(to)).toMatchObject({ suppressed: false });
      const next = await send(to);
      expect(next.body).not.toHaveProperty('suppressed');
      await waitForStatus(next.messageId, 'sent');
    });

    it('suppresses on a DSN about the address, also when its Status is 5.0.0 and its diagnostic says 5.1.1 (Exim)', async () => {
      const to = `gone-${unique()}@example.org`;
      const { messageId, returnPath, headerMessageId } = await relayed(to);
      const raw = dsn(returnPath, headerMessageId, to, '5.0.0', [`550 5.1.1 <${to}>: Recipient address rejected: User unknown`]);
      await client.sendMail({ envelope: { from: '', to: [returnPath] }, raw });
      await waitForEvent(messageId, 'bounced');
      await waitFor(
        'the address suppressed',
        () => suppression(to),
        (s) => s.suppressed,
      );
    });
  });

  describe('provider events', () => {
    const post = (body: unknown) => postProviderEvents(t.http, provider, body);

    it('does not suppress on a bounce whose reason is a policy refusal, and does on one without any code', async () => {
      const refused = `owner-${unique()}@example.org`;
      const first = await send(refused);
      await waitForStatus(first.messageId, 'sent');
      await post({ messageId: first.messageId, type: 'bounced', reason: '554 5.7.1 Message rejected under our policy' }).expect(202);
      await waitForStatus(first.messageId, 'bounced');
      expect(await suppression(refused)).toMatchObject({ suppressed: false });

      const hard = `gone-${unique()}@example.org`;
      const second = await send(hard);
      await waitForStatus(second.messageId, 'sent');
      await post({ messageId: second.messageId, type: 'bounced' }).expect(202);
      await waitForStatus(second.messageId, 'bounced');
      expect(await suppression(hard)).toMatchObject({ suppressed: true, reason: 'bounced' });
    });
  });
});
