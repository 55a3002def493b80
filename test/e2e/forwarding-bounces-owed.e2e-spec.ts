import { randomBytes } from 'node:crypto';
import { DsnService } from '../../src/forwarding/dsn/dsn.service';
import { EmailSweeper } from '../../src/email/email.sweeper';
import { parseDeliveryReport } from '../../src/forwarding/delivery-report';
import { BounceHarness, BOUNCE_DOMAIN as DOMAIN, BOUNCE_HOSTNAME as HOSTNAME, startBounceHarness } from '../support/bounce-harness';
import { bearer } from '../support/factories';
import { rawMessage } from '../support/raw-message';
import { SmtpSession } from '../support/smtp-session';
import { waitFor } from '../support/wait-for';

/** Aliases whose one destination (`<alias>@dest.test`) the provider refuses with 550 5.1.1. */
const REFUSING = ['nullsender', 'auto', 'dsnfail', 'forged'];

/**
 * Whom a notification about forwarded mail is owed, and how the ones owed are made: none to a null sender, about an
 * automatic message or a notification, or to an envelope sender that was not authenticated (SPF, or DKIM aligned with
 * it); the sweep makes those a dead process left owed, oldest first, giving up on one that fails every time; an address
 * whose every destination is suppressed is refused at RCPT TO instead. Real SMTP on both sides.
 */
describe('Forwarding: whom delivery status notifications are owed, and the sweep', () => {
  let h: BounceHarness;

  beforeAll(async () => {
    h = await startBounceHarness({
      ...Object.fromEntries(REFUSING.map((alias) => [alias, [`${alias}@dest.test`]])),
      stuck: ['stuck@dest.test'],
      crash: ['crash@dest.test'],
      late: ['late@dest.test'],
      left: ['left@dest.test'],
      half: ['ada@dest.test', 'left@dest.test'],
    });
    for (const alias of REFUSING)
      h.sink.rejectRecipient(`${alias}@dest.test`, 550, `5.1.1 <${alias}@dest.test>: Recipient address rejected: User unknown`);
    await h.t.http.post('/email/suppression').set(bearer(h.adminKey)).send({ email: 'left@dest.test' }).expect(201);
  });

  afterAll(() => h?.close());

  const unique = () => randomBytes(4).toString('hex');

  /**
   * A message from `sender` forwarded to crash@, whose destination refused it `ageSeconds` ago, as a process that died
   * before notifying left it: failed, its failure recorded, no job. Its id.
   */
  const failedUnreported = (sender: string, ageSeconds: number): Promise<string> =>
    h.whilePaused(async () => {
      const subject = `died ${unique()}`;
      await h.send(sender, [`crash@${DOMAIN}`], subject);
      const { id } = await h.forwardedMessage(subject);
      await (await h.emailQueue().getJob(id))?.remove();
      await h.db.query(`UPDATE messages SET status = 'failed', pending_recipients = '[]' WHERE id = $1`, [id]);
      await h.db.query(
        `INSERT INTO forward_failures (message_id, recipient, status, diagnostic, failed_at) ` +
          `VALUES ($1, 'crash@dest.test', '5.7.1', 'smtp; 554 5.7.1 Message refused', now() - make_interval(secs => $2))`,
        [id, ageSeconds],
      );
      return id;
    });

  it('tells the sender of a message the sweeper finds with its attempts used up and no job', async () => {
    const sender = `s-${unique()}@origin.test`;
    const subject = `stuck ${unique()}`;
    const stuck = await h.whilePaused(async () => {
      await h.send(sender, [`stuck@${DOMAIN}`], subject);
      const message = await h.forwardedMessage(subject);
      await (await h.emailQueue().getJob(message.id))?.remove();
      // Its last attempt could not even be written: attempts used up, still deferred.
      await h.db.query(`UPDATE messages SET status = 'deferred', attempts = 29, updated_at = now() - interval '1 hour' WHERE id = $1`, [
        message.id,
      ]);
      return message;
    });
    // (A periodic sweep holding the lock at that moment does the same.)
    await h.t.app.get(EmailSweeper).sweep(new Date());
    await waitFor(
      'the stuck message failed',
      () => h.statusOf(stuck.id),
      (status) => status === 'failed',
    );
    const dsn = await h.sink.waitFor((m) => m.envelope.rcptTo.includes(sender));
    expect((await parseDeliveryReport(dsn.raw))?.recipients).toEqual([
      expect.objectContaining({ recipient: `stuck@${DOMAIN}`, status: '4.4.7' }),
    ]);
    expect(h.sink.messages.filter((m) => m.envelope.rcptTo.includes('stuck@dest.test'))).toEqual([]);
  });

  it('makes the notification a process that died after recording the failure owed, at the next sweep', async () => {
    const sender = `s-${unique()}@origin.test`;
    await failedUnreported(sender, 60);
    await h.t.app.get(EmailSweeper).sweep(new Date());
    const dsn = await h.sink.waitFor((m) => m.envelope.rcptTo.includes(sender));
    expect((await parseDeliveryReport(dsn.raw))?.recipients).toEqual([
      { outcome: 'bounced', recipient: `crash@${DOMAIN}`, status: '5.7.1', reason: '554 5.7.1 Message refused', suppresses: false },
    ]);
  });

  it('gives up on a notification that fails at every attempt (5), so that the sweep, oldest first, gets to the rest', async () => {
    const [poisoned, sender] = [`s-${unique()}@origin.test`, `s-${unique()}@origin.test`];
    // Two forwards left unreported; the older one's notification can never be stored.
    const poisonedId = await failedUnreported(poisoned, 30);
    const waitingId = await failedUnreported(sender, 20);
    await h.db.query(`CREATE FUNCTION refuse_poisoned() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'poisoned'; END $$`);
    await h.db.query(
      `CREATE TRIGGER refuse_poisoned BEFORE INSERT ON messages FOR EACH ROW WHEN (NEW.recipients ? '${poisoned}') EXECUTE FUNCTION refuse_poisoned()`,
    );
    const failureOf = async (id: string) =>
      (await h.db.query('SELECT reported_at, report_attempts, dsn_message_id FROM forward_failures WHERE message_id = $1', [id]))[0];
    try {
      const dsn = h.t.app.get(DsnService);
      // One message a sweep: the oldest, until it is given up on.
      for (let sweep = 1; sweep <= 5; sweep++) {
        expect(await dsn.sweep(new Date(), 1)).toBe(1);
        expect(await failureOf(waitingId)).toMatchObject({ reported_at: null, report_attempts: 0 });
      }
      expect(await failureOf(poisonedId)).toEqual({ reported_at: expect.any(Date), report_attempts: 5, dsn_message_id: null });
      await dsn.sweep(new Date(), 1);
      await h.sink.waitFor((m) => m.envelope.rcptTo.includes(sender));
      expect(h.notificationsTo(poisoned)).toEqual([]);
    } finally {
      await h.db.query('DROP TRIGGER refuse_poisoned ON messages; DROP FUNCTION refuse_poisoned()');
    }
  });

  it('sends no notification about a message from the null sender, or one a machine sent', async () => {
    const bounceSubject = `null sender ${unique()}`;
    await h.send('', [`nullsender@${DOMAIN}`], bounceSubject);
    const autoSender = `s-${unique()}@origin.test`;
    const autoSubject = `auto ${unique()}`;
    await h.send(autoSender, [`auto@${DOMAIN}`], autoSubject, ['Auto-Submitted: auto-replied']);

    const bounced = await h.forwardedMessage(bounceSubject);
    const auto = await h.forwardedMessage(autoSubject);
    await h.settle(bounced.id);
    await h.settle(auto.id);
    expect(await h.statusOf(bounced.id)).toBe('bounced');
    expect(await h.statusOf(auto.id)).toBe('bounced');
    expect(h.notificationsTo(autoSender)).toEqual([]);
    expect(await h.notificationRows(autoSender)).toEqual([]);
    // The null sender's forward records nothing to report; the automatic one's failure is marked reported, with no notification.
    const failures: { message_id: string; reported_at: Date | null; dsn_message_id: string | null }[] = await h.db.query(
      'SELECT message_id, reported_at, dsn_message_id FROM forward_failures WHERE message_id = ANY($1)',
      [[bounced.id, auto.id]],
    );
    expect(failures).toEqual([{ message_id: auto.id, reported_at: expect.any(Date), dsn_message_id: null }]);
  });

  it('sends no notification to an envelope sender that was not authenticated: the failure is marked reported', async () => {
    const sender = `s-${unique()}@forged.test`;
    const subject = `forged ${unique()}`;
    await h.send(sender, [`forged@${DOMAIN}`], subject);
    const forwarded = await h.forwardedMessage(subject);
    await h.settle(forwarded.id);
    expect(await h.statusOf(forwarded.id)).toBe('bounced');
    expect(h.notificationsTo(sender)).toEqual([]);
    expect(await h.notificationRows(sender)).toEqual([]);
    expect(await h.db.query('SELECT reported_at, dsn_message_id FROM forward_failures WHERE message_id = $1', [forwarded.id])).toEqual([
      { reported_at: expect.any(Date), dsn_message_id: null },
    ]);
  });

  it('makes no notification about a notification that could not be delivered', async () => {
    const sender = `s-${unique()}@origin.test`;
    h.sink.rejectRecipient(sender, 550, '5.1.1 No such sender mailbox');
    const subject = `dsn fails ${unique()}`;
    await h.send(sender, [`dsnfail@${DOMAIN}`], subject);
    const [dsn] = await waitFor(
      'the notification made',
      () => h.notificationRows(sender),
      (rows) => rows.length > 0,
    );
    await waitFor(
      'the notification bounced',
      () => h.statusOf(dsn.id),
      (s) => s === 'bounced',
    );
    await h.settle((await h.forwardedMessage(subject)).id);

    expect(await h.notificationRows(sender)).toHaveLength(1);
    expect(h.notificationsTo(sender)).toEqual([]);
    expect((await h.db.query('SELECT count(*)::int AS n FROM forward_failures WHERE message_id = $1', [dsn.id]))[0].n).toBe(0);
    expect(h.sink.messages.filter((m) => m.envelope.mailFrom === '' && m.envelope.rcptTo.includes(`MAILER-DAEMON@${HOSTNAME}`))).toEqual(
      [],
    );
  });

  it('refuses an address whose every destination is suppressed (at RCPT TO, or at DATA once they are), and forwards to the rest of one that has others', async () => {
    const sender = `s-${unique()}@origin.test`;
    const refused = await h.send(sender, [`left@${DOMAIN}`], `suppressed ${unique()}`).then(
      () => null,
      (err: { responseCode: number; response: string; command: string }) => err,
    );
    expect(refused).toMatchObject({ responseCode: 550, command: 'RCPT TO' });
    expect(refused?.response).toMatch(new RegExp(`^550 5\\.2\\.1 <left@${DOMAIN}>: Recipient address rejected`));

    const subject = `half ${unique()}`;
    expect((await h.send(sender, [`half@${DOMAIN}`], subject)).response).toMatch(/^250 2\.0\.0 Ok: queued as inb_/);
    const forwarded = await h.sink.waitFor((m) => m.parsed?.subject === subject);
    expect(forwarded.envelope.rcptTo).toEqual(['ada@dest.test']);
    await h.settle((await h.forwardedMessage(subject)).id);
    expect(h.notificationsTo(sender)).toEqual([]);

    // Suppressed between RCPT TO and the end of DATA: refused then, rather than taken and dropped.
    const { session } = await SmtpSession.open(h.port);
    try {
      await session.command('EHLO client.origin.test');
      await session.command(`MAIL FROM:<${sender}>`);
      expect(await session.command(`RCPT TO:<late@${DOMAIN}>`)).toMatch(/^250 /);
      await h.t.http.post('/email/suppression').set(bearer(h.adminKey)).send({ email: 'late@dest.test' }).expect(201);
      expect(await session.command('DATA')).toMatch(/^354 /);
      const body = rawMessage(`late@${DOMAIN}`, `late ${unique()}`).toString('latin1');
      expect(await session.command(`${body}\r\n.`)).toMatch(/^550 5\.2\.1 <late@fwd\.bounce\.test>/);
    } finally {
      session.close();
    }

    // Off the list, it takes mail again at once.
    await h.t.http
      .delete(`/email/suppression/${encodeURIComponent('left@dest.test')}`)
      .set(bearer(h.adminKey))
      .expect(200);
    const again = `back ${unique()}`;
    await h.send(sender, [`left@${DOMAIN}`], again);
    expect((await h.sink.waitFor((m) => m.parsed?.subject === again)).envelope.rcptTo).toEqual(['left@dest.test']);
  });
});
