import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { AppConfigService } from '../../src/config/app-config.service';
import { TrackingTokens } from '../../src/tracking/tracking-tokens';
import { UnsubscribeConfirmations } from '../../src/tracking/unsubscribe-confirmations';
import { startDnsServer, TestDnsServer } from '../support/dns-server';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount } from '../support/factories';
import { SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';
import { waitFor } from '../support/wait-for';

const PUBLIC_URL = 'http://mailroom.test';
const CONFIRMATION = /^Confirm unsubscribing from /;

// Unsubscribe links naming no recipient (mail sent before each recipient's copy had its own link, issue 35).
describe('unsubscribe links naming no recipient', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let dns: TestDnsServer;
  let adminKey: string;
  const domain = 'old.acme.test';
  const unique = () => randomBytes(6).toString('hex');

  beforeAll(async () => {
    sink = await startSmtpSink();
    dns = await startDnsServer();
    t = await createTestApp({ env: { SMTP_URL: sink.url } });
    const account = await createAccount(t, 'Acme');
    adminKey = account.adminKey;
    await createVerifiedDomain(t, account.accountId, domain, dns);
  });

  afterAll(async () => {
    await t.close();
    await sink.close();
    await dns.close();
  });

  /** Sends, waits until the message is `sent`, and answers the old form of its unsubscribe link: naming nobody. */
  async function oldLink(body: Record<string, unknown>): Promise<{ messageId: string; path: string }> {
    const res = await t.http
      .post('/email/send')
      .set(bearer(adminKey))
      .send({ from: `news@${domain}`, subject: `old ${unique()}`, html: '<p>Hi</p>', tracking: { unsubscribe: true }, ...body })
      .expect(200);
    const messageId: string = res.body.messageId;
    await waitFor(
      `${messageId} sent`,
      () => statusOf(messageId),
      (events) => events.some((e) => e.type === 'sent'),
    );
    return { messageId, path: `/u/${t.app.get(TrackingTokens).token({ kind: 'u', messageId })}` };
  }

  const statusOf = async (messageId: string): Promise<{ type: string; recipient?: string }[]> =>
    (await t.http.get(`/email/status/${messageId}`).set(bearer(adminKey)).expect(200)).body.events;
  const suppressed = async (email: string): Promise<boolean> =>
    (await t.http.get('/email/suppression/check').query({ email }).set(bearer(adminKey)).expect(200)).body.suppressed;
  /** The unsubscribe confirmations accepted for the address, once every POST so far has been dealt with. */
  async function confirmationsTo(address: string): Promise<number> {
    await t.app.get(UnsubscribeConfirmations).settled();
    const rows: { n: number }[] = await t.app
      .get(DataSource)
      .query("SELECT count(*)::int AS n FROM messages WHERE recipients ? $1 AND subject LIKE 'Confirm unsubscribing from %'", [address]);
    return rows[0].n;
  }

  it('of a message to several: nobody is unsubscribed; a recipient is mailed its own link, a stranger nothing, the same answer', async () => {
    const { messageId, path } = await oldLink({
      to: ['old.first@example.org', 'old.second@example.org'],
      bcc: ['old.hidden@example.org'],
    });

    const page = await t.http.get(path).set('Accept', 'text/html').expect(200);
    expect(page.text).toContain('name="email"');
    expect(page.text).not.toContain('old.first@example.org');
    const refused = await t.http.post(path).type('form').send('List-Unsubscribe=One-Click').expect(400);
    expect(refused.body.error).toMatchObject({ code: 'VALIDATION_FAILED', details: { fields: [{ field: 'email' }] } });

    // A co-recipient's address and a stranger's get the same answer, as JSON and as a page.
    const stranger = await t.http.post(path).type('form').send({ email: 'stranger@example.org' }).expect(200);
    const coRecipient = await t.http.post(path).type('form').send({ email: 'Old.Second@example.org' }).expect(200);
    expect(stranger.body).toEqual({ success: true, email: 'stranger@example.org', confirmationSent: true });
    expect(coRecipient.body).toEqual({ success: true, email: 'old.second@example.org', confirmationSent: true });
    const pageFor = async (email: string) =>
      (await t.http.post(path).type('form').set('Accept', 'text/html').send({ email }).expect(200)).text.replace(email, '<address>');
    const strangerPage = await pageFor('other.stranger@example.org');
    expect(strangerPage).toBe(await pageFor('old.hidden@example.org'));
    expect(strangerPage).toContain('we sent that address a link to confirm');

    // Nobody was unsubscribed by the form.
    for (const address of ['old.first@example.org', 'old.second@example.org', 'old.hidden@example.org', 'stranger@example.org']) {
      expect(await suppressed(address)).toBe(false);
    }
    expect((await statusOf(messageId)).some((e) => e.type === 'unsubscribed')).toBe(false);

    // The co-recipient gets its own link, from the operator's sender; strangers get nothing.
    const mail = await sink.waitFor(
      (m) => m.envelope.rcptTo.includes('old.second@example.org') && CONFIRMATION.test(m.parsed?.subject ?? ''),
    );
    expect(mail.parsed!.from!.value[0].address).toBe(t.app.get(AppConfigService).formsFrom.address);
    expect(mail.parsed!.text).toContain(`news@${domain}`);
    const link = new RegExp(`${PUBLIC_URL}(/u/[A-Za-z0-9_.-]+)`).exec(mail.parsed!.text!)![1];
    expect(t.app.get(TrackingTokens).verify('u', link.slice(3))).toEqual({ kind: 'u', messageId, recipient: expect.any(String) });
    expect(mail.parsed!.html).toContain(`${PUBLIC_URL}${link}`);
    expect(await confirmationsTo('stranger@example.org')).toBe(0);
    expect(await confirmationsTo('other.stranger@example.org')).toBe(0);
    expect(await confirmationsTo('old.hidden@example.org')).toBe(1);

    // Asking again mails nothing more: the form cannot flood an address.
    await t.http.post(path).type('form').send({ email: 'old.second@example.org' }).expect(200, {
      success: true,
      email: 'old.second@example.org',
      confirmationSent: true,
    });
    expect(await confirmationsTo('old.second@example.org')).toBe(1);

    // The mailed link's page names its recipient; its POST unsubscribes that recipient, and only it.
    const own = await t.http.get(link).set('Accept', 'text/html').expect(200);
    expect(own.text).toContain('old.second@example.org');
    expect(own.text).not.toContain('name="email"');
    await t.http.post(link).type('form').send('List-Unsubscribe=One-Click').expect(200, { success: true, email: 'old.second@example.org' });
    expect(await suppressed('old.second@example.org')).toBe(true);
    expect(await suppressed('old.first@example.org')).toBe(false);
    const events = (await statusOf(messageId)).filter((e) => e.type === 'unsubscribed');
    expect(events.map((e) => e.recipient)).toEqual(['old.second@example.org']);
  });

  it('of a message to one address: unsubscribes that address at once', async () => {
    const { messageId, path } = await oldLink({ to: 'old.single@example.org' });
    await t.http.post(path).type('form').send('List-Unsubscribe=One-Click').expect(200, { success: true, email: 'old.single@example.org' });
    expect(await suppressed('old.single@example.org')).toBe(true);
    expect((await statusOf(messageId)).filter((e) => e.type === 'unsubscribed').map((e) => e.recipient)).toEqual([
      'old.single@example.org',
    ]);
    expect(await confirmationsTo('old.single@example.org')).toBe(0);
  });
});
