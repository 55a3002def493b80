import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import type { Queue } from 'bull';
import { simpleParser, type SimpleParserOptions } from 'mailparser';
import nodemailer, { type Transporter } from 'nodemailer';
import { DataSource } from 'typeorm';
import { DeliveryService } from '../../src/email/delivery.service';
import { DsnService } from '../../src/email/dsn/dsn.service';
import { EmailQueue } from '../../src/email/email.queue';
import { EmailSweeper } from '../../src/email/email.sweeper';
import { parseDeliveryReport } from '../../src/forwarding/delivery-report';
import { startDnsServer, TestDnsServer } from '../support/dns-server';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount } from '../support/factories';
import { freePort } from '../support/free-port';
import { rawMessage } from '../support/raw-message';
import { ReceivedMail, SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';
import { waitFor, waitForValue } from '../support/wait-for';

const DOMAIN = 'fwd.bounce.test';
const HOSTNAME = 'mx.mailroom.test';
/** Aliases whose one destination (`<alias>@dest.test`) the provider refuses with 550 5.1.1. */
const REFUSING = ['gone', 'partial', 'nullsender', 'auto', 'dsnfail', 'twice'];

/**
 * Forwarded mail that cannot be delivered after its 250 (RFC 5321 6.1): the sender gets one RFC 3464 notification
 * through the provider, from MAILER-DAEMON with the null sender; a null sender, an automatic message or a notification
 * gets none; an address whose every destination is suppressed is refused at RCPT TO. Real SMTP on both sides.
 */
describe('Forwarding: delivery status notifications to the original sender', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let dns: TestDnsServer;
  let client: Transporter;
  let adminKey: string;
  let db: DataSource;
  let port: number;

  beforeAll(async () => {
    sink = await startSmtpSink();
    dns = await startDnsServer();
    port = await freePort();
    t = await createTestApp({
      env: {
        SMTP_URL: sink.url,
        DNS_SERVERS: dns.address,
        INBOUND_SMTP_PORT: String(port),
        INBOUND_SMTP_HOST: '127.0.0.1',
        INBOUND_SMTP_HOSTNAME: HOSTNAME,
        // The whole 29-attempt schedule in about 9 s.
        EMAIL_RETRY_FIRST_DELAY_MS: '1',
      },
    });
    db = t.app.get(DataSource);
    const account = await createAccount(t, 'Bounces');
    adminKey = account.adminKey;
    await createVerifiedDomain(t, account.accountId, DOMAIN);
    await t.http
      .put(`/domains/${DOMAIN}`)
      .set(bearer(adminKey))
      .send({
        // Each case refuses its own destination: a destination that bounced is suppressed, and refused at RCPT TO after.
        forwarding: {
          ...Object.fromEntries(REFUSING.map((alias) => [alias, [`${alias}@dest.test`]])),
          slow: ['slow@dest.test'],
          ok: ['ada@dest.test'],
          lost: ['lost@dest.test'],
          stuck: ['stuck@dest.test'],
          crash: ['crash@dest.test'],
          late: ['late@dest.test'],
          left: ['left@dest.test'],
          half: ['ada@dest.test', 'left@dest.test'],
        },
      })
      .expect(200);
    for (const alias of REFUSING)
      sink.rejectRecipient(`${alias}@dest.test`, 550, `5.1.1 <${alias}@dest.test>: Recipient address rejected: User unknown`);
    sink.rejectRecipient('slow@dest.test', 451, '4.2.2 Mailbox full, try later');
    await t.http.post('/email/suppression').set(bearer(adminKey)).send({ email: 'left@dest.test' }).expect(201);
    client = nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true });
  });

  afterAll(async () => {
    client?.close();
    await t?.close();
    await sink?.close();
    await dns?.close();
  });

  const unique = () => randomBytes(4).toString('hex');
  const notificationsTo = (sender: string) => sink.messages.filter((m) => m.envelope.rcptTo.includes(sender) && m.envelope.mailFrom === '');
  const notificationRows = async (sender: string): Promise<{ id: string; status: string }[]> =>
    db.query(`SELECT id, status FROM messages WHERE from_address = $1 AND recipients = $2::jsonb`, [
      `MAILER-DAEMON@${HOSTNAME}`,
      JSON.stringify([sender]),
    ]);
  const forwardedMessage = (subject: string) =>
    waitForValue('the forwarded message', async () => {
      const rows: { id: string; status: string }[] = await db.query(
        'SELECT id, status FROM messages WHERE subject = $1 AND inbound_message_id IS NOT NULL',
        [subject],
      );
      return rows[0];
    });
  const usage = async (): Promise<{ emails: number; forwards: number }> => {
    const { quotas } = (await t.http.get('/settings').set(bearer(adminKey)).expect(200)).body;
    return { emails: quotas.emails_per_month.used, forwards: quotas.forwards_per_month.used };
  };
  const statusOf = async (id: string): Promise<string> => (await db.query('SELECT status FROM messages WHERE id = $1', [id]))[0].status;

  const emailQueue = () => t.app.get(EmailQueue).queue as Queue;
  /** Runs `work` while this instance's email worker takes no job. */
  async function whilePaused<T>(work: () => Promise<T>): Promise<T> {
    await emailQueue().pause(true);
    try {
      return await work();
    } finally {
      await emailQueue().resume(true);
    }
  }

  /** Sends through the inbound server; resolves with the server's answer. */
  const send = (from: string, to: string[], subject: string, headers: string[] = []) =>
    client.sendMail({ envelope: { from, to }, raw: rawMessage(to.join(', '), subject, { headers }) });

  /** Waits for what happened to be final, runs the sweep as the sweeper would, and gives a stray notification time to come. */
  async function settle(messageId: string): Promise<void> {
    await waitFor(
      'the forwarded message final',
      () => statusOf(messageId),
      (s) => ['sent', 'bounced', 'failed'].includes(s),
    );
    await t.app.get(DsnService).sweep(new Date());
    await new Promise((resolve) => setTimeout(resolve, 500));
  }

  it('tells the sender of a message a destination refused (550): multipart/report from MAILER-DAEMON with the null sender', async () => {
    const sender = `s-${unique()}@origin.test`;
    const subject = `refused ${unique()}`;
    const before = await usage();
    expect((await send(sender, [`gone@${DOMAIN}`], subject)).response).toMatch(/^250 /);

    const dsn = await sink.waitFor((m) => m.envelope.rcptTo.includes(sender));
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
    const later = await send(sender, [`gone@${DOMAIN}`], `later ${unique()}`).catch(
      (err: { responseCode: number; response: string }) => err,
    );
    expect(later).toMatchObject({ responseCode: 550, response: expect.stringMatching(/^550 5\.2\.1 /) });
  });

  it('reports only the destinations that failed when others took the message', async () => {
    const sender = `s-${unique()}@origin.test`;
    const subject = `partial ${unique()}`;
    await send(sender, [`ok@${DOMAIN}`, `partial@${DOMAIN}`], subject);
    await sink.waitFor((m) => m.parsed?.subject === subject && m.envelope.rcptTo.includes('ada@dest.test'));
    const dsn = await sink.waitFor((m) => m.envelope.rcptTo.includes(sender));
    expect((await parseDeliveryReport(dsn.raw))?.recipients.map((r) => [r.recipient, r.status])).toEqual([[`partial@${DOMAIN}`, '5.1.1']]);
  });

  it('tells the sender once the retries ran out (29 attempts): a destination answering 451, or an error of ours each time', async () => {
    const sender = `s-${unique()}@origin.test`;
    const subject = `expired ${unique()}`;
    await send(sender, [`slow@${DOMAIN}`], subject);
    const forwarded = await forwardedMessage(subject);

    // Its received bytes gone before the first attempt: every attempt fails on our side, none reaches the provider.
    const lostSender = `s-${unique()}@origin.test`;
    const lostSubject = `lost ${unique()}`;
    const lost = await whilePaused(async () => {
      await send(lostSender, [`lost@${DOMAIN}`], lostSubject);
      const message = await forwardedMessage(lostSubject);
      await db.query('UPDATE inbound_messages SET source = NULL WHERE id = (SELECT inbound_message_id FROM messages WHERE id = $1)', [
        message.id,
      ]);
      return message;
    });

    const dsn = await sink.waitFor((m) => m.envelope.rcptTo.includes(sender), 40_000);
    expect(await statusOf(forwarded.id)).toBe('failed');
    const events = (await t.http.get(`/email/status/${forwarded.id}`).set(bearer(adminKey)).expect(200)).body.events;
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'failed', detail: expect.stringContaining('gave up after 29 attempts') }),
    );
    expect(dsn.envelope.mailFrom).toBe('');
    expect((await parseDeliveryReport(dsn.raw))?.recipients).toEqual([
      expect.objectContaining({ outcome: 'bounced', recipient: `slow@${DOMAIN}`, status: '4.2.2' }),
    ]);
    expect(dsn.parsed?.text).toContain(`<slow@${DOMAIN}>: not accepted in time: 451 4.2.2`);

    const lostDsn = await sink.waitFor((m) => m.envelope.rcptTo.includes(lostSender), 40_000);
    expect(await statusOf(lost.id)).toBe('failed');
    expect((await parseDeliveryReport(lostDsn.raw))?.recipients).toEqual([
      { outcome: 'bounced', recipient: `lost@${DOMAIN}`, status: '4.4.7', reason: 'delivery time expired' },
    ]);
    // The received message is gone: no headers to return, the notification still answers its Message-ID.
    expect(lostDsn.raw.toString()).not.toContain('text/rfc822-headers');
    expect(lostDsn.parsed?.inReplyTo).toBe(`<${lostSubject.replace(/\W/g, '')}@origin.test>`);
  }, 60_000);

  it('tells the sender of a message the sweeper finds with its attempts used up and no job', async () => {
    const sender = `s-${unique()}@origin.test`;
    const subject = `stuck ${unique()}`;
    const stuck = await whilePaused(async () => {
      await send(sender, [`stuck@${DOMAIN}`], subject);
      const message = await forwardedMessage(subject);
      await (await emailQueue().getJob(message.id))?.remove();
      // Its last attempt could not even be written: attempts used up, still deferred.
      await db.query(`UPDATE messages SET status = 'deferred', attempts = 29, updated_at = now() - interval '1 hour' WHERE id = $1`, [
        message.id,
      ]);
      return message;
    });
    // (A periodic sweep holding the lock at that moment does the same.)
    await t.app.get(EmailSweeper).sweep(new Date());
    await waitFor(
      'the stuck message failed',
      () => statusOf(stuck.id),
      (status) => status === 'failed',
    );
    const dsn = await sink.waitFor((m) => m.envelope.rcptTo.includes(sender));
    expect((await parseDeliveryReport(dsn.raw))?.recipients).toEqual([
      expect.objectContaining({ recipient: `stuck@${DOMAIN}`, status: '4.4.7' }),
    ]);
    expect(sink.messages.filter((m) => m.envelope.rcptTo.includes('stuck@dest.test'))).toEqual([]);
  });

  it('makes the notification a process that died after recording the failure owed, at the next sweep', async () => {
    const sender = `s-${unique()}@origin.test`;
    const subject = `died ${unique()}`;
    await whilePaused(async () => {
      await send(sender, [`crash@${DOMAIN}`], subject);
      const message = await forwardedMessage(subject);
      await (await emailQueue().getJob(message.id))?.remove();
      // What the move to failed committed, the notification not yet made.
      await db.query(`UPDATE messages SET status = 'failed', pending_recipients = '[]' WHERE id = $1`, [message.id]);
      await db.query(
        `INSERT INTO forward_failures (message_id, recipient, status, diagnostic, failed_at) VALUES ($1, 'crash@dest.test', '5.7.1', 'smtp; 554 5.7.1 Message refused', now() - interval '1 minute')`,
        [message.id],
      );
    });
    await t.app.get(EmailSweeper).sweep(new Date());
    const dsn = await sink.waitFor((m) => m.envelope.rcptTo.includes(sender));
    expect((await parseDeliveryReport(dsn.raw))?.recipients).toEqual([
      { outcome: 'bounced', recipient: `crash@${DOMAIN}`, status: '5.7.1', reason: '554 5.7.1 Message refused' },
    ]);
  });

  it('sends no notification about a message from the null sender, or one a machine sent', async () => {
    const bounceSubject = `null sender ${unique()}`;
    await send('', [`nullsender@${DOMAIN}`], bounceSubject);
    const autoSender = `s-${unique()}@origin.test`;
    const autoSubject = `auto ${unique()}`;
    await send(autoSender, [`auto@${DOMAIN}`], autoSubject, ['Auto-Submitted: auto-replied']);

    const bounced = await forwardedMessage(bounceSubject);
    const auto = await forwardedMessage(autoSubject);
    await settle(bounced.id);
    await settle(auto.id);
    expect(await statusOf(bounced.id)).toBe('bounced');
    expect(await statusOf(auto.id)).toBe('bounced');
    expect(notificationsTo(autoSender)).toEqual([]);
    expect(await notificationRows(autoSender)).toEqual([]);
    // The null sender's forward records nothing to report; the automatic one's failure is marked reported, with no notification.
    const failures: { message_id: string; reported_at: Date | null; dsn_message_id: string | null }[] = await db.query(
      'SELECT message_id, reported_at, dsn_message_id FROM forward_failures WHERE message_id = ANY($1)',
      [[bounced.id, auto.id]],
    );
    expect(failures).toEqual([{ message_id: auto.id, reported_at: expect.any(Date), dsn_message_id: null }]);
  });

  it('makes no notification about a notification that could not be delivered', async () => {
    const sender = `s-${unique()}@origin.test`;
    sink.rejectRecipient(sender, 550, '5.1.1 No such sender mailbox');
    const subject = `dsn fails ${unique()}`;
    await send(sender, [`dsnfail@${DOMAIN}`], subject);
    const [dsn] = await waitFor(
      'the notification made',
      () => notificationRows(sender),
      (rows) => rows.length > 0,
    );
    await waitFor(
      'the notification bounced',
      () => statusOf(dsn.id),
      (s) => s === 'bounced',
    );
    await settle((await forwardedMessage(subject)).id);

    expect(await notificationRows(sender)).toHaveLength(1);
    expect(notificationsTo(sender)).toEqual([]);
    expect((await db.query('SELECT count(*)::int AS n FROM forward_failures WHERE message_id = $1', [dsn.id]))[0].n).toBe(0);
    expect(sink.messages.filter((m) => m.envelope.mailFrom === '' && m.envelope.rcptTo.includes(`MAILER-DAEMON@${HOSTNAME}`))).toEqual([]);
  });

  it('makes one notification when the delivery job runs twice at once, and when it is reported again', async () => {
    const sender = `s-${unique()}@origin.test`;
    const subject = `twice ${unique()}`;
    const forwardedId = await whilePaused(async () => {
      await send(sender, [`twice@${DOMAIN}`], subject);
      const id = (await forwardedMessage(subject)).id;
      const delivery = t.app.get(DeliveryService);
      // A stalled job run again beside itself: both send, both get the 550, one move wins.
      await Promise.all([
        delivery.deliver(id, { attempt: 1, isLastAttempt: false }),
        delivery.deliver(id, { attempt: 1, isLastAttempt: false }),
      ]);
      return id;
    });
    await waitFor(
      'the notification sent',
      () => notificationRows(sender),
      (rows) => rows.length === 1 && rows[0].status === 'sent',
    );
    const dsn = t.app.get(DsnService);
    await Promise.all([dsn.report(forwardedId), dsn.report(forwardedId), dsn.sweep(new Date())]);
    await settle(forwardedId);

    expect(await notificationRows(sender)).toHaveLength(1);
    expect(notificationsTo(sender)).toHaveLength(1);
  });

  it('refuses an address whose every destination is suppressed (at RCPT TO, or at DATA once they are), and forwards to the rest of one that has others', async () => {
    const sender = `s-${unique()}@origin.test`;
    const refused = await send(sender, [`left@${DOMAIN}`], `suppressed ${unique()}`).then(
      () => null,
      (err: { responseCode: number; response: string; command: string }) => err,
    );
    expect(refused).toMatchObject({ responseCode: 550, command: 'RCPT TO' });
    expect(refused?.response).toMatch(new RegExp(`^550 5\\.2\\.1 <left@${DOMAIN}>: Recipient address rejected`));

    const subject = `half ${unique()}`;
    expect((await send(sender, [`half@${DOMAIN}`], subject)).response).toMatch(/^250 2\.0\.0 Ok: queued as inb_/);
    const forwarded = await sink.waitFor((m) => m.parsed?.subject === subject);
    expect(forwarded.envelope.rcptTo).toEqual(['ada@dest.test']);
    await settle((await forwardedMessage(subject)).id);
    expect(notificationsTo(sender)).toEqual([]);

    // Suppressed between RCPT TO and the end of DATA: refused then, rather than taken and dropped.
    const session = await smtpSession(port);
    try {
      await session.command('EHLO client.origin.test');
      await session.command(`MAIL FROM:<${sender}>`);
      expect(await session.command(`RCPT TO:<late@${DOMAIN}>`)).toMatch(/^250 /);
      await t.http.post('/email/suppression').set(bearer(adminKey)).send({ email: 'late@dest.test' }).expect(201);
      expect(await session.command('DATA')).toMatch(/^354 /);
      const body = rawMessage(`late@${DOMAIN}`, `late ${unique()}`).toString('latin1');
      expect(await session.command(`${body}\r\n.`)).toMatch(/^550 5\.2\.1 <late@fwd\.bounce\.test>/);
    } finally {
      session.close();
    }

    // Off the list, it takes mail again at once.
    await t.http
      .delete(`/email/suppression/${encodeURIComponent('left@dest.test')}`)
      .set(bearer(adminKey))
      .expect(200);
    const again = `back ${unique()}`;
    await send(sender, [`left@${DOMAIN}`], again);
    expect((await sink.waitFor((m) => m.parsed?.subject === again)).envelope.rcptTo).toEqual(['left@dest.test']);
  });
});

/** A raw SMTP session: each command's reply (multi-line replies whole). */
async function smtpSession(port: number): Promise<{ command(line: string): Promise<string>; close(): void }> {
  const socket = connect(port, '127.0.0.1');
  let buffered = '';
  let waiting: ((reply: string) => void) | null = null;
  const complete = () => /(^|\r\n)\d{3} [^\r\n]*\r\n$/.test(buffered);
  socket.on('data', (chunk: Buffer) => {
    buffered += chunk.toString('latin1');
    if (waiting && complete()) {
      const reply = buffered;
      buffered = '';
      const resolve = waiting;
      waiting = null;
      resolve(reply);
    }
  });
  const next = () =>
    new Promise<string>((resolve) => {
      if (complete()) {
        const reply = buffered;
        buffered = '';
        return resolve(reply);
      }
      waiting = resolve;
    });
  await next(); // the greeting
  return {
    command: (line) => {
      socket.write(`${line}\r\n`);
      return next();
    },
    close: () => socket.destroy(),
  };
}

/** The text of a notification's part of that type (the delivery-status part kept apart, not pasted into the text). */
async function dsnPart(mail: ReceivedMail, contentType: string): Promise<string> {
  const parsed = await simpleParser(mail.raw, { keepDeliveryStatus: true } as SimpleParserOptions);
  const part = parsed.attachments.find((a) => a.contentType === contentType);
  if (!part) throw new Error(`no ${contentType} part`);
  return part.content.toString('latin1');
}
