import { randomBytes } from 'node:crypto';
import { simpleParser, type SimpleParserOptions } from 'mailparser';
import { DeliveryService } from '../../src/email/delivery.service';
import { DsnService } from '../../src/forwarding/dsn/dsn.service';
import { parseDeliveryReport } from '../../src/forwarding/delivery-report';
import { BounceHarness, BOUNCE_DOMAIN as DOMAIN, BOUNCE_HOSTNAME as HOSTNAME, startBounceHarness } from '../support/bounce-harness';
import { bearer } from '../support/factories';
import { ReceivedMail } from '../support/smtp-sink';
import { waitFor } from '../support/wait-for';

/** Aliases whose one destination (`<alias>@dest.test`) the provider refuses with 550 5.1.1. */
const REFUSING = ['gone', 'partial', 'twice'];
/** Aliases whose one destination answers 451 4.2.2. */
const DEFERRING = ['slow', 'muted'];

/**
 * Forwarded mail that cannot be delivered after its 250 (RFC 5321 6.1): the sender gets one RFC 3464 notification
 * through the provider, from MAILER-DAEMON with the null sender, for a destination refused (5xx), given up on, or put
 * on the suppression list while the message waited. Real SMTP on both sides. (Who is owed none, and the sweep:
 * forwarding-bounces-owed.)
 */
describe('Forwarding: delivery status notifications to the original sender', () => {
  let h: BounceHarness;

  beforeAll(async () => {
    h = await startBounceHarness({
      ...Object.fromEntries([...REFUSING, ...DEFERRING].map((alias) => [alias, [`${alias}@dest.test`]])),
      ok: ['ada@dest.test'],
      lost: ['lost@dest.test'],
    });
    for (const alias of REFUSING)
      h.sink.rejectRecipient(`${alias}@dest.test`, 550, `5.1.1 <${alias}@dest.test>: Recipient address rejected: User unknown`);
    for (const alias of DEFERRING) h.sink.rejectRecipient(`${alias}@dest.test`, 451, '4.2.2 Mailbox full, try later');
  });

  afterAll(() => h?.close());

  const unique = () => randomBytes(4).toString('hex');
  const usage = async (): Promise<{ emails: number; forwards: number }> => {
    const { quotas } = (await h.t.http.get('/settings').set(bearer(h.adminKey)).expect(200)).body;
    return { emails: quotas.emails_per_month.used, forwards: quotas.forwards_per_month.used };
  };

  it('tells the sender of a message a destination refused (550): multipart/report from MAILER-DAEMON with the null sender', async () => {
    const sender = `s-${unique()}@origin.test`;
    const subject = `refused ${unique()}`;
    const before = await usage();
    expect((await h.send(sender, [`gone@${DOMAIN}`], subject)).response).toMatch(/^250 /);

    const dsn = await h.sink.waitFor((m) => m.envelope.rcptTo.includes(sender));
    expect(dsn.envelope.mailFrom).toBe('');
    const mail = dsn.parsed!;
    expect(mail.from?.value[0].address).toBe(`MAILER-DAEMON@${HOSTNAME}`);
    expect(mail.headers.get('auto-submitted')).toBe('auto-replied');
    expect(mail.headers.get('content-type')).toMatchObject({ value: 'multipart/report', params: { 'report-type': 'delivery-status' } });
    expect(mail.text).toContain(`<gone@${DOMAIN}>: refused: 550 5.1.1`);

    const report = await parseDeliveryReport(dsn.raw);
    expect(report?.recipients).toEqual([
      {
        outcome: 'bounced',
        recipient: `gone@${DOMAIN}`,
        status: '5.1.1',
        // The destination is the account's: the sender reads the address it wrote, also in the next hop's answer.
        reason: `550 5.1.1 <gone@${DOMAIN}>: Recipient address rejected: User unknown`,
        suppresses: true,
      },
    ]);
    expect(report?.originalMessageId).toBe(`<${subject.replace(/\W/g, '')}@origin.test>`);
    expect(dsn.raw.toString()).not.toContain('gone@dest.test');
    const status = await dsnPart(dsn, 'message/delivery-status');
    expect(status).toMatch(new RegExp(`^Reporting-MTA: dns; ${HOSTNAME}\r\nArrival-Date: .+ \\+0000\r\n\r\n`));
    expect(status).toContain('Action: failed\r\n');
    const headers = await dsnPart(dsn, 'text/rfc822-headers');
    expect(headers).toContain(`Subject: ${subject}\r\n`);
    expect(headers).toContain('From: Sender <sender@origin.test>\r\n');

    // Mailroom's own mail about the forward: the forward counts, the notification is no email of the account's.
    expect(await usage()).toEqual({ emails: before.emails, forwards: before.forwards + 1 });

    // The destination went on the account's suppression list: later mail for the address is refused at RCPT TO.
    const later = await h
      .send(sender, [`gone@${DOMAIN}`], `later ${unique()}`)
      .catch((err: { responseCode: number; response: string }) => err);
    expect(later).toMatchObject({ responseCode: 550, response: expect.stringMatching(/^550 5\.2\.1 /) });
  });

  it('reports only the destinations that failed when others took the message', async () => {
    const sender = `s-${unique()}@origin.test`;
    const subject = `partial ${unique()}`;
    await h.send(sender, [`ok@${DOMAIN}`, `partial@${DOMAIN}`], subject);
    await h.sink.waitFor((m) => m.parsed?.subject === subject && m.envelope.rcptTo.includes('ada@dest.test'));
    const dsn = await h.sink.waitFor((m) => m.envelope.rcptTo.includes(sender));
    expect((await parseDeliveryReport(dsn.raw))?.recipients.map((r) => [r.recipient, r.status])).toEqual([[`partial@${DOMAIN}`, '5.1.1']]);
  });

  it('tells the sender once the retries ran out (29 attempts): a destination answering 451, or an error of ours each time', async () => {
    const sender = `s-${unique()}@origin.test`;
    const subject = `expired ${unique()}`;
    await h.send(sender, [`slow@${DOMAIN}`], subject);
    const forwarded = await h.forwardedMessage(subject);

    // Its received bytes gone before the first attempt: every attempt fails on our side, none reaches the provider.
    const lostSender = `s-${unique()}@origin.test`;
    const lostSubject = `lost ${unique()}`;
    const lost = await h.whilePaused(async () => {
      await h.send(lostSender, [`lost@${DOMAIN}`], lostSubject);
      const message = await h.forwardedMessage(lostSubject);
      await h.db.query('UPDATE inbound_messages SET source = NULL WHERE id = (SELECT inbound_message_id FROM messages WHERE id = $1)', [
        message.id,
      ]);
      return message;
    });

    const dsn = await h.sink.waitFor((m) => m.envelope.rcptTo.includes(sender), 40_000);
    expect(await h.statusOf(forwarded.id)).toBe('failed');
    const events = (await h.t.http.get(`/email/status/${forwarded.id}`).set(bearer(h.adminKey)).expect(200)).body.events;
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'failed', detail: expect.stringContaining('gave up after 29 attempts') }),
    );
    expect(dsn.envelope.mailFrom).toBe('');
    expect((await parseDeliveryReport(dsn.raw))?.recipients).toEqual([
      expect.objectContaining({ outcome: 'bounced', recipient: `slow@${DOMAIN}`, status: '4.2.2' }),
    ]);
    expect(dsn.parsed?.text).toContain(`<slow@${DOMAIN}>: not accepted in time: 451 4.2.2`);

    const lostDsn = await h.sink.waitFor((m) => m.envelope.rcptTo.includes(lostSender), 40_000);
    expect(await h.statusOf(lost.id)).toBe('failed');
    expect((await parseDeliveryReport(lostDsn.raw))?.recipients).toEqual([
      { outcome: 'bounced', recipient: `lost@${DOMAIN}`, status: '4.4.7', reason: 'delivery time expired', suppresses: false },
    ]);
    // The received message is gone: no headers to return, the notification still answers its Message-ID.
    expect(lostDsn.raw.toString()).not.toContain('text/rfc822-headers');
    expect(lostDsn.parsed?.inReplyTo).toBe(`<${lostSubject.replace(/\W/g, '')}@origin.test>`);
  }, 60_000);

  it('tells the sender of a message whose destination went on the suppression list while it waited (5.2.1)', async () => {
    const sender = `s-${unique()}@origin.test`;
    const subject = `muted ${unique()}`;
    const forwardedId = await h.whilePaused(async () => {
      await h.send(sender, [`muted@${DOMAIN}`], subject);
      const id = (await h.forwardedMessage(subject)).id;
      const delivery = h.t.app.get(DeliveryService);
      await expect(delivery.deliver(id, { attempt: 1, isLastAttempt: false })).rejects.toThrow(/4\.2\.2/);
      // Another message's bounce (or the account) puts the destination on the list before the next attempt.
      await h.t.http.post('/email/suppression').set(bearer(h.adminKey)).send({ email: 'muted@dest.test' }).expect(201);
      await delivery.deliver(id, { attempt: 2, isLastAttempt: false });
      return id;
    });
    expect(await h.statusOf(forwardedId)).toBe('failed');
    const dsn = await h.sink.waitFor((m) => m.envelope.rcptTo.includes(sender));
    expect((await parseDeliveryReport(dsn.raw))?.recipients).toEqual([
      {
        outcome: 'bounced',
        recipient: `muted@${DOMAIN}`,
        status: '5.2.1',
        reason: 'mailbox disabled, not accepting messages',
        suppresses: true,
      },
    ]);
    expect(dsn.raw.toString()).not.toContain('muted@dest.test');
  });

  it('makes one notification when the delivery job runs twice at once, and when it is reported again', async () => {
    const sender = `s-${unique()}@origin.test`;
    const subject = `twice ${unique()}`;
    const forwardedId = await h.whilePaused(async () => {
      await h.send(sender, [`twice@${DOMAIN}`], subject);
      const id = (await h.forwardedMessage(subject)).id;
      const delivery = h.t.app.get(DeliveryService);
      // A stalled job run again beside itself: both send, both get the 550, one move wins.
      await Promise.all([
        delivery.deliver(id, { attempt: 1, isLastAttempt: false }),
        delivery.deliver(id, { attempt: 1, isLastAttempt: false }),
      ]);
      return id;
    });
    await waitFor(
      'the notification sent',
      () => h.notificationRows(sender),
      (rows) => rows.length === 1 && rows[0].status === 'sent',
    );
    const dsn = h.t.app.get(DsnService);
    await Promise.all([dsn.report(forwardedId), dsn.report(forwardedId), dsn.sweep(new Date())]);
    await h.settle(forwardedId);

    expect(await h.notificationRows(sender)).toHaveLength(1);
    expect(h.notificationsTo(sender)).toHaveLength(1);
  });
});

/** The text of a notification's part of that type (the delivery-status part kept apart, not pasted into the text). */
async function dsnPart(mail: ReceivedMail, contentType: string): Promise<string> {
  const parsed = await simpleParser(mail.raw, { keepDeliveryStatus: true } as SimpleParserOptions);
  const part = parsed.attachments.find((a) => a.contentType === contentType);
  if (!part) throw new Error(`no ${contentType} part`);
  return part.content.toString('latin1');
}
