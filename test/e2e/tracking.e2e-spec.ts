import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { TrackingTokens } from '../../src/tracking/tracking-tokens';
import { startDnsServer, TestDnsServer } from '../support/dns-server';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount } from '../support/factories';
import { ReceivedMail, SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';
import { waitFor } from '../support/wait-for';
import { startWebhookReceiver, WebhookReceiver } from '../support/webhook-receiver';

const DESKTOP = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36';
const PUBLIC_URL = 'http://mailroom.test';

interface StatusEvent {
  type: string;
  timestamp: string;
  recipient?: string;
  detail?: string;
  url?: string;
  machine?: boolean;
}

// Tracking (D-22): the delivered email's pixel, links and List-Unsubscribe headers, and the public routes they lead to.
describe('tracking', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let dns: TestDnsServer;
  let adminKey: string;
  let hooks: WebhookReceiver<{ type: string; messageId: string }>;
  const domain = 'news.acme.test';
  const unique = () => randomBytes(6).toString('hex');

  beforeAll(async () => {
    sink = await startSmtpSink();
    dns = await startDnsServer();
    hooks = await startWebhookReceiver();
    t = await createTestApp({
      env: { SMTP_URL: sink.url, TRUST_PROXY: 'loopback', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_POLL_INTERVAL_MS: '50' },
    });
    const account = await createAccount(t, 'Acme');
    adminKey = account.adminKey;
    await createVerifiedDomain(t, account.accountId, domain, dns);
    await t.http
      .post('/email/webhooks')
      .set(bearer(adminKey))
      .send({ url: `${hooks.base}/hooks`, events: ['opened'] })
      .expect(201);
  });

  afterAll(async () => {
    await t.close();
    await sink.close();
    await dns.close();
    await hooks.close();
  });

  /** Sends, waits for the email at the sink and for the message to be `sent`. */
  async function deliver(body: Record<string, unknown>): Promise<{ messageId: string; mail: ReceivedMail }> {
    const subject = `tracked ${unique()}`;
    const res = await t.http
      .post('/email/send')
      .set(bearer(adminKey))
      .send({ from: `Acme News <news@${domain}>`, to: 'ada@example.org', subject, ...body })
      .expect(200);
    const mail = await sink.waitFor((m) => m.parsed?.subject === subject);
    await waitForEvents(res.body.messageId, (events) => events.some((e) => e.type === 'sent'));
    return { messageId: res.body.messageId, mail };
  }

  async function statusOf(messageId: string): Promise<StatusEvent[]> {
    const res = await t.http.get(`/email/status/${messageId}`).set(bearer(adminKey)).expect(200);
    return res.body.events;
  }

  async function waitForEvents(messageId: string, done: (events: StatusEvent[]) => boolean): Promise<StatusEvent[]> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const events = await statusOf(messageId);
      if (done(events)) return events;
      if (Date.now() > deadline) throw new Error(`events of ${messageId} never got there: ${JSON.stringify(events)}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** Moves the message's sent_at back, past the window in which every hit counts as a machine's. */
  const sentLongAgo = (messageId: string) =>
    t.app.get(DataSource).query("UPDATE messages SET sent_at = sent_at - interval '1 minute' WHERE id = $1", [messageId]);

  const pathOf = (url: string) => {
    expect(url.startsWith(`${PUBLIC_URL}/`)).toBe(true);
    return url.slice(PUBLIC_URL.length);
  };

  /** A header of the email as it arrived (unfolded). */
  function header(mail: ReceivedMail, name: string): string | undefined {
    const head = mail.raw
      .toString('utf8')
      .split(/\r?\n\r?\n/)[0]
      .replace(/\r?\n[ \t]+/g, ' ');
    const line = head.split(/\r?\n/).find((l) => l.toLowerCase().startsWith(`${name.toLowerCase()}:`));
    return line?.slice(name.length + 1).trim();
  }

  /** The href values outside comments, in order. */
  const hrefs = (html: string) => [...html.replace(/<!--[^]*?-->/g, '').matchAll(/href=(["'])(.*?)\1/g)].map((m) => m[2]);

  const HTML =
    '<html><body><p>Hello!</p><a href="https://shop.acme.test/sale?from=mail&amp;id=7">Sale</a>' +
    '<!-- <a href="https://shop.acme.test/hidden">hidden</a> --><a href="mailto:help@acme.test">Mail us</a><a href="#top">Top</a>' +
    "<p><a href='https://acme.test/blog/post-1'>Blog</a></p></body></html>";
  const ALL = { opens: true, clicks: true, unsubscribe: true };

  describe('the delivered email', () => {
    it('has the pixel, both links under PUBLIC_URL, the others untouched, the one-click headers, and a DKIM signature covering them', async () => {
      const { mail } = await deliver({ html: HTML, text: 'Sale: https://shop.acme.test/sale', tracking: ALL });
      const html = mail.parsed!.html as string;

      const links = hrefs(html);
      expect(links).toHaveLength(4);
      expect(links[0]).toMatch(new RegExp(`^${PUBLIC_URL}/t/c/[\\w-]+\\.[\\w-]+$`));
      expect(links[3]).toMatch(new RegExp(`^${PUBLIC_URL}/t/c/[\\w-]+\\.[\\w-]+$`));
      expect(links[0]).not.toBe(links[3]);
      expect(links.slice(1, 3)).toEqual(['mailto:help@acme.test', '#top']);
      expect(html).toContain('<!-- <a href="https://shop.acme.test/hidden">hidden</a> -->');
      expect(html).toMatch(
        new RegExp(
          `<img src="${PUBLIC_URL}/t/o/[\\w-]+\\.[\\w-]+" alt="" width="1" height="1" border="0" style="display:block;[^"]*" /></body></html>$`,
        ),
      );
      expect(mail.parsed!.text).toContain('Sale: https://shop.acme.test/sale');

      expect(header(mail, 'List-Unsubscribe')).toMatch(new RegExp(`^<${PUBLIC_URL}/u/[\\w-]+\\.[\\w-]+>$`));
      expect(header(mail, 'List-Unsubscribe-Post')).toBe('List-Unsubscribe=One-Click');

      const dkim = await dns.dkimResults(mail.raw, `news@${domain}`);
      expect(dkim[0]).toMatchObject({ signingDomain: domain, status: { result: 'pass' } });
      const signed = /\bh=([^;]+)/.exec(header(mail, 'DKIM-Signature')!)![1].replace(/\s/g, '').toLowerCase().split(':');
      expect(signed).toEqual(expect.arrayContaining(['list-unsubscribe', 'list-unsubscribe-post']));
    });

    it('offers no unsubscribe because opens and clicks are tracked (a receipt is not a newsletter)', async () => {
      const { mail } = await deliver({ html: HTML, tracking: { opens: true, clicks: true } });
      expect(mail.parsed!.html).toContain(`${PUBLIC_URL}/t/o/`);
      expect(hrefs(mail.parsed!.html as string)[0]).toMatch(new RegExp(`^${PUBLIC_URL}/t/c/`));
      expect(header(mail, 'List-Unsubscribe')).toBeUndefined();
      expect(header(mail, 'List-Unsubscribe-Post')).toBeUndefined();
    });

    it('is left as written without tracking, and keeps the sender’s own List-Unsubscribe', async () => {
      const plain = await deliver({ html: HTML });
      expect((plain.mail.parsed!.html as string).trimEnd()).toBe(HTML);
      expect(header(plain.mail, 'List-Unsubscribe')).toBeUndefined();

      const own = await deliver({
        html: HTML,
        tracking: { unsubscribe: true },
        headers: { 'List-Unsubscribe': '<mailto:leave@acme.test>' },
      });
      expect((own.mail.parsed!.html as string).trimEnd()).toBe(HTML);
      expect(header(own.mail, 'List-Unsubscribe')).toBe('<mailto:leave@acme.test>');
      expect(header(own.mail, 'List-Unsubscribe-Post')).toBeUndefined();
    });
  });

  describe('opens', () => {
    it('answers the transparent GIF and records `opened`; within the first seconds, and from Apple’s proxy, as a machine', async () => {
      const { messageId, mail } = await deliver({ html: HTML, tracking: ALL });
      const pixel = pathOf(/<img src="([^"]+)"/.exec(mail.parsed!.html as string)![1]);

      // Right after sending: a scanner or a prefetch, whoever it claims to be.
      await t.http.get(pixel).set('User-Agent', DESKTOP).expect(200);
      await sentLongAgo(messageId);
      const res = await t.http.get(pixel).set('User-Agent', DESKTOP).expect(200);
      expect(res.headers['content-type']).toBe('image/gif');
      expect(res.headers['cache-control']).toBe('no-store, private');
      expect(res.body).toHaveLength(43);
      expect((res.body as Buffer).subarray(0, 6).toString()).toBe('GIF89a');

      await t.http.get(pixel).set('User-Agent', 'Mozilla/5.0').expect(200);
      await t.http.get(pixel).set('User-Agent', DESKTOP).set('X-Forwarded-For', '17.58.63.1').expect(200);

      const events = await waitForEvents(messageId, (all) => all.filter((e) => e.type === 'opened').length === 4);
      const opens = events.filter((e) => e.type === 'opened');
      expect(opens.map((e) => e.machine ?? false)).toEqual([true, false, true, true]);
      expect(opens[1]).toEqual({ type: 'opened', timestamp: expect.any(String), recipient: 'ada@example.org' });
    });

    it('records every one of many concurrent opens by different clients', async () => {
      const { messageId, mail } = await deliver({ html: HTML, tracking: { opens: true } });
      const pixel = pathOf(/<img src="([^"]+)"/.exec(mail.parsed!.html as string)![1]);
      await Promise.all(
        Array.from({ length: 25 }, (_, i) =>
          t.http
            .get(pixel)
            .set('User-Agent', DESKTOP)
            .set('X-Forwarded-For', `198.51.100.${i + 1}`)
            .expect(200),
        ),
      );
      await waitForEvents(messageId, (all) => all.filter((e) => e.type === 'opened').length === 25);
    });

    it('counts repeated opens by one client within the window once: one event, one outbox row, one webhook delivery', async () => {
      const { messageId, mail } = await deliver({ html: HTML, tracking: { opens: true } });
      await sentLongAgo(messageId);
      const pixel = pathOf(/<img src="([^"]+)"/.exec(mail.parsed!.html as string)![1]);
      const open = (ip: string, agent = DESKTOP) => t.http.get(pixel).set('User-Agent', agent).set('X-Forwarded-For', ip).expect(200);

      // One client showing the message again and again, some of it at once: every fetch gets the GIF.
      await open('203.0.113.10');
      await Promise.all([open('203.0.113.10'), open('203.0.113.10'), open('203.0.113.10')]);
      await open('203.0.113.10');
      // Other clients: another address, another user agent on the same address, another IPv6 /64.
      await open('203.0.113.11');
      await open('203.0.113.10', 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko)');
      await open('2001:db8:1:2::1');
      await open('2001:db8:1:2::99'); // the same /64
      await open('2001:db8:1:3::1');

      const events = await waitForEvents(messageId, (all) => all.filter((e) => e.type === 'opened').length >= 5);
      const deliveries = await waitFor(
        'the webhook deliveries',
        () => hooks.received.filter((h) => h.body.type === 'opened' && h.body.messageId === messageId),
        (found) => found.length >= 5,
      );
      // Anything more would have arrived by now: the events were written before their outbox rows were published.
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(events.filter((e) => e.type === 'opened')).toHaveLength(5);
      expect((await statusOf(messageId)).filter((e) => e.type === 'opened')).toHaveLength(5);
      expect(hooks.received.filter((h) => h.body.type === 'opened' && h.body.messageId === messageId)).toHaveLength(deliveries.length);
      expect(deliveries).toHaveLength(5);
      const outbox = await t.app
        .get(DataSource)
        .query("SELECT count(*)::int AS n FROM event_outbox WHERE type = 'opened' AND payload->>'messageId' = $1", [messageId]);
      expect(outbox[0].n).toBe(5);
    });

    it('is 404 for a tampered token, a token of another kind and a message not tracked for opens', async () => {
      const { messageId, mail } = await deliver({ html: HTML, tracking: ALL });
      const pixel = pathOf(/<img src="([^"]+)"/.exec(mail.parsed!.html as string)![1]);
      const token = pixel.slice('/t/o/'.length);
      const res = await t.http.get(`/t/o/${changeOneCharacter(token)}`).expect(404);
      expect(res.body).toEqual({ error: { code: 'NOT_FOUND', message: expect.any(String) }, documentation: expect.any(String) });
      await t.http.get(`/t/o/${tokens().token({ kind: 'u', messageId })}`).expect(404);

      const untracked = await deliver({ html: HTML, tracking: { clicks: true } });
      expect(untracked.mail.parsed!.html).not.toContain('<img');
      await t.http.get(`/t/o/${tokens().token({ kind: 'o', messageId: untracked.messageId })}`).expect(404);
      expect((await statusOf(messageId)).some((e) => e.type === 'opened')).toBe(false);
    });
  });

  describe('clicks', () => {
    it('redirects to the exact original URL and records `clicked` with it', async () => {
      const { messageId, mail } = await deliver({ html: HTML, tracking: ALL });
      await sentLongAgo(messageId);
      const [first, , , second] = hrefs(mail.parsed!.html as string);

      const res = await t.http.get(pathOf(first)).set('User-Agent', DESKTOP).expect(302);
      expect(res.headers.location).toBe('https://shop.acme.test/sale?from=mail&id=7');
      await t.http.get(pathOf(second)).set('User-Agent', 'curl/8.5.0').expect(302).expect('Location', 'https://acme.test/blog/post-1');

      const events = await waitForEvents(messageId, (all) => all.filter((e) => e.type === 'clicked').length === 2);
      expect(events.filter((e) => e.type === 'clicked')).toEqual([
        {
          type: 'clicked',
          timestamp: expect.any(String),
          recipient: 'ada@example.org',
          detail: 'https://shop.acme.test/sale?from=mail&id=7',
          url: 'https://shop.acme.test/sale?from=mail&id=7',
        },
        {
          type: 'clicked',
          timestamp: expect.any(String),
          recipient: 'ada@example.org',
          detail: 'https://acme.test/blog/post-1',
          url: 'https://acme.test/blog/post-1',
          machine: true,
        },
      ]);
    });

    it('follows links recorded when the message was sent, without the stored HTML (its content cleared)', async () => {
      const { messageId, mail } = await deliver({ html: HTML, tracking: ALL });
      const [first, , , second] = hrefs(mail.parsed!.html as string);
      await t.app.get(DataSource).query("UPDATE messages SET content = content - 'html' WHERE id = $1", [messageId]);

      await t.http
        .get(pathOf(first))
        .set('User-Agent', DESKTOP)
        .expect(302)
        .expect('Location', 'https://shop.acme.test/sale?from=mail&id=7');
      await t.http.get(pathOf(second)).set('User-Agent', DESKTOP).expect(302).expect('Location', 'https://acme.test/blog/post-1');
      await t.http.get(`/t/c/${tokens().token({ kind: 'c', messageId, link: 2 })}`).expect(404);
      await waitForEvents(messageId, (all) => all.filter((e) => e.type === 'clicked').length === 2);
    });

    it('follows the links of a message sent before links were recorded from its HTML, once, and keeps them for later clicks', async () => {
      const { messageId, mail } = await deliver({ html: HTML, tracking: ALL });
      const db = t.app.get(DataSource);
      await db.query('DELETE FROM message_links WHERE message_id = $1', [messageId]);
      const [first, , , second] = hrefs(mail.parsed!.html as string);

      await t.http.get(pathOf(second)).expect(302).expect('Location', 'https://acme.test/blog/post-1');
      expect((await db.query('SELECT urls FROM message_links WHERE message_id = $1', [messageId]))[0].urls).toEqual([
        'https://shop.acme.test/sale?from=mail&id=7',
        'https://acme.test/blog/post-1',
      ]);
      await db.query("UPDATE messages SET content = content - 'html' WHERE id = $1", [messageId]);
      await t.http.get(pathOf(first)).expect(302).expect('Location', 'https://shop.acme.test/sale?from=mail&id=7');

      // One sent before, whose content is gone too: nothing to follow.
      const gone = await deliver({ html: HTML, tracking: ALL });
      await db.query('DELETE FROM message_links WHERE message_id = $1', [gone.messageId]);
      await db.query("UPDATE messages SET content = content - 'html' WHERE id = $1", [gone.messageId]);
      await t.http.get(pathOf(hrefs(gone.mail.parsed!.html as string)[0])).expect(404);
    });

    it('is 404 for a tampered token, a token of another kind, a link out of range and a message not tracked for clicks', async () => {
      const { messageId, mail } = await deliver({ html: HTML, tracking: ALL });
      const token = pathOf(hrefs(mail.parsed!.html as string)[0]).slice('/t/c/'.length);
      const tampered = await t.http.get(`/t/c/${changeOneCharacter(token)}`).expect(404);
      expect(tampered.body.error.code).toBe('NOT_FOUND');
      expect(tampered.headers.location).toBeUndefined();
      await t.http.get(`/t/c/${tokens().token({ kind: 'o', messageId })}`).expect(404);
      await t.http.get(`/t/c/${tokens().token({ kind: 'c', messageId, link: 2 })}`).expect(404);
      await t.http.get(`/t/c/${tokens().token({ kind: 'c', messageId, link: 1 })}`).expect(302);

      const untracked = await deliver({ html: HTML, tracking: { opens: true } });
      expect(hrefs(untracked.mail.parsed!.html as string)[0]).toBe('https://shop.acme.test/sale?from=mail&amp;id=7');
      await t.http.get(`/t/c/${tokens().token({ kind: 'c', messageId: untracked.messageId, link: 0 })}`).expect(404);
      expect((await statusOf(untracked.messageId)).some((e) => e.type === 'clicked')).toBe(false);
    });
  });

  describe('unsubscribe', () => {
    const unsubscribePath = (mail: ReceivedMail) => pathOf(/^<(.+)>$/.exec(header(mail, 'List-Unsubscribe')!)![1]);

    it('shows a confirmation page that changes nothing', async () => {
      const { messageId, mail } = await deliver({ to: 'page.reader@example.org', html: HTML, tracking: { unsubscribe: true } });
      const res = await t.http.get(unsubscribePath(mail)).set('Accept', 'text/html').expect(200);
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(res.headers['content-security-policy']).toContain("default-src 'none'");
      expect(res.text).toContain('<form method="post">');
      expect(res.text).toContain('page.reader@example.org');
      expect(res.text).not.toMatch(/<script|<link|src=/);
      expect((await suppressionOf('page.reader@example.org')).suppressed).toBe(false);
      expect((await statusOf(messageId)).some((e) => e.type === 'unsubscribed')).toBe(false);

      await t.http.get(`/u/${changeOneCharacter(unsubscribePath(mail).slice(3))}`).expect(404);
      const page = await t.http
        .get(`/u/${changeOneCharacter(unsubscribePath(mail).slice(3))}`)
        .set('Accept', 'text/html')
        .expect(404);
      expect(page.text).toContain('Link not found');
    });

    it('one-click: suppresses the recipient and records one `unsubscribed` event; a repeat records nothing more', async () => {
      const { messageId, mail } = await deliver({ to: 'one.click@example.org', html: HTML, tracking: ALL });
      const path = unsubscribePath(mail);

      const res = await t.http.post(path).type('form').send('List-Unsubscribe=One-Click').expect(200);
      expect(res.body).toEqual({ success: true, email: 'one.click@example.org' });
      expect(await suppressionOf('one.click@example.org')).toMatchObject({ suppressed: true, reason: 'unsubscribed' });
      await t.http.post(path).type('form').send('List-Unsubscribe=One-Click').expect(200);
      const browser = await t.http.post(path).type('form').set('Accept', 'text/html,application/xhtml+xml').send('').expect(200);
      expect(browser.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(browser.text).toContain('You are unsubscribed');

      const events = (await statusOf(messageId)).filter((e) => e.type === 'unsubscribed');
      expect(events).toEqual([{ type: 'unsubscribed', timestamp: expect.any(String), recipient: 'one.click@example.org' }]);

      // Sends to the address are dropped from now on.
      const again = await t.http
        .post('/email/send')
        .set(bearer(adminKey))
        .send({ from: `news@${domain}`, to: ['one.click@example.org', 'other@example.org'], subject: 'again', text: 'x' })
        .expect(200);
      expect(again.body.suppressed).toEqual(['one.click@example.org']);

      await t.http
        .post(`/u/${changeOneCharacter(path.slice(3))}`)
        .type('form')
        .send('List-Unsubscribe=One-Click')
        .expect(404);
    });

    it('gives each recipient of a message to several its own copy and link: one-click unsubscribes that recipient only', async () => {
      const subject = `to three ${unique()}`;
      const res = await t.http
        .post('/email/send')
        .set(bearer(adminKey))
        .send({
          from: `news@${domain}`,
          to: ['first.of.two@example.org', 'Second <second.of.two@example.org>'],
          bcc: ['hidden.one@example.org'],
          subject,
          html: HTML,
          tracking: { unsubscribe: true },
        })
        .expect(200);
      const messageId: string = res.body.messageId;
      const copyOf = (address: string) => sink.waitFor((m) => m.parsed?.subject === subject && m.envelope.rcptTo.includes(address));
      const [first, second, hidden] = await Promise.all([
        copyOf('first.of.two@example.org'),
        copyOf('second.of.two@example.org'),
        copyOf('hidden.one@example.org'),
      ]);
      await waitForEvents(messageId, (events) => events.some((e) => e.type === 'sent'));
      // One transaction each, the same email: one Message-ID, the bcc not shown.
      for (const mail of [first, second, hidden]) expect(mail.envelope.rcptTo).toHaveLength(1);
      expect(new Set([first, second, hidden].map((m) => m.parsed!.messageId)).size).toBe(1);
      expect(header(hidden, 'Bcc')).toBeUndefined();
      const paths = [first, second, hidden].map(unsubscribePath);
      expect(new Set(paths).size).toBe(3);

      // Each link's page names its own recipient and asks for nothing.
      const page = await t.http.get(paths[1]).set('Accept', 'text/html').expect(200);
      expect(page.text).toContain('second.of.two@example.org');
      expect(page.text).not.toContain('name="email"');

      // RFC 8058: the POST carries no address; an `email` in it is not read (nobody unsubscribes a co-recipient).
      await t.http
        .post(paths[0])
        .type('form')
        .send('List-Unsubscribe=One-Click')
        .expect(200, { success: true, email: 'first.of.two@example.org' });
      await t.http.post(paths[2]).type('form').send({ email: 'second.of.two@example.org' }).expect(200, {
        success: true,
        email: 'hidden.one@example.org',
      });
      expect(await suppressionOf('first.of.two@example.org')).toMatchObject({ suppressed: true, reason: 'unsubscribed' });
      expect((await suppressionOf('second.of.two@example.org')).suppressed).toBe(false);
      expect((await suppressionOf('hidden.one@example.org')).suppressed).toBe(true);
      const events = (await statusOf(messageId)).filter((e) => e.type === 'unsubscribed');
      expect(events.map((e) => e.recipient).sort()).toEqual(['first.of.two@example.org', 'hidden.one@example.org']);
    });
  });

  describe('a list send', () => {
    it('carries the one-click headers; its link is not rewritten; unsubscribing leaves the list only, not other mail', async () => {
      const list = await t.http
        .post('/email/lists')
        .set(bearer(adminKey))
        .send({ name: `News ${unique()}` })
        .expect(201);
      const listId: string = list.body.id;
      await t.http
        .post(`/email/lists/${listId}/subscribers`)
        .set(bearer(adminKey))
        .send([{ email: 'listener@example.org', name: 'Lis' }])
        .expect(200);
      const subject = `list ${unique()}`;
      await t.http
        .post('/email/send')
        .set(bearer(adminKey))
        .send({
          from: `news@${domain}`,
          list: listId,
          subject,
          html: '<p>Hi {{name}}</p><a href="https://acme.test/news">News</a> <a href="{{unsubscribeUrl}}">Unsubscribe</a>',
          tracking: { clicks: true },
        })
        .expect(200);
      const mail = await sink.waitFor((m) => m.parsed?.subject === subject);
      expect(mail.envelope.rcptTo).toEqual(['listener@example.org']);

      const unsubscribeUrl = /^<(.+)>$/.exec(header(mail, 'List-Unsubscribe')!)![1];
      expect(header(mail, 'List-Unsubscribe-Post')).toBe('List-Unsubscribe=One-Click');
      const [news, unsubscribe] = hrefs(mail.parsed!.html as string);
      expect(news).toMatch(new RegExp(`^${PUBLIC_URL}/t/c/`));
      expect(unsubscribe).toBe(unsubscribeUrl);

      const page = await t.http.get(pathOf(unsubscribeUrl)).set('Accept', 'text/html').expect(200);
      expect(page.text).toContain(`the mailing list <strong>${list.body.name}</strong>`);
      await t.http
        .post(pathOf(unsubscribeUrl))
        .type('form')
        .send('List-Unsubscribe=One-Click')
        .expect(200, { success: true, email: 'listener@example.org' });
      const done = await t.http.post(pathOf(unsubscribeUrl)).type('form').set('Accept', 'text/html').send('').expect(200);
      expect(done.text).toContain(`no more mail from the mailing list <strong>${list.body.name}</strong>`);
      const subscribers = await t.http.get(`/email/lists/${listId}/subscribers`).set(bearer(adminKey)).expect(200);
      expect(subscribers.body.subscribers).toEqual([expect.objectContaining({ email: 'listener@example.org', status: 'unsubscribed' })]);
      const messageId = (await t.app.get(DataSource).query('SELECT id FROM messages WHERE subject = $1', [subject]))[0].id;
      const events = await waitForEvents(messageId, (all) => all.some((e) => e.type === 'unsubscribed'));
      expect(events.filter((e) => e.type === 'unsubscribed')).toEqual([
        { type: 'unsubscribed', timestamp: expect.any(String), recipient: 'listener@example.org' },
      ]);

      // Not suppressed: the account's other mail (a receipt, a password reset) still reaches the address.
      expect((await suppressionOf('listener@example.org')).suppressed).toBe(false);
      const later = await deliver({ to: 'listener@example.org', text: 'Your receipt' });
      expect(later.mail.envelope.rcptTo).toEqual(['listener@example.org']);
    });
  });

  describe('a batch send', () => {
    it('carries the one-click headers, each message its own link, unless it says unsubscribe: false', async () => {
      const subject = `batch ${unique()}`;
      const batch = (tracking?: object) =>
        t.http
          .post('/email/batch')
          .set(bearer(adminKey))
          .send({
            from: `news@${domain}`,
            subject: `${subject} {{name}}`,
            text: 'Hi {{name}}',
            recipients: [
              { email: 'batch.one@example.org', name: tracking ? 'off' : 'one' },
              { email: 'batch.two@example.org', name: tracking ? 'off2' : 'two' },
            ],
            ...(tracking ? { tracking } : {}),
          })
          .expect(200);
      await batch();
      await batch({ opens: true, unsubscribe: false });
      const [one, two, off] = await Promise.all(
        ['one', 'two', 'off'].map((name) => sink.waitFor((m) => m.parsed?.subject === `${subject} ${name}`)),
      );
      expect(header(one, 'List-Unsubscribe-Post')).toBe('List-Unsubscribe=One-Click');
      expect(unsubscribePathOf(one)).not.toBe(unsubscribePathOf(two));
      expect(header(off, 'List-Unsubscribe')).toBeUndefined();

      await t.http
        .post(unsubscribePathOf(two))
        .type('form')
        .send('List-Unsubscribe=One-Click')
        .expect(200, { success: true, email: 'batch.two@example.org' });
      expect(await suppressionOf('batch.two@example.org')).toMatchObject({ suppressed: true, reason: 'unsubscribed' });
      expect((await suppressionOf('batch.one@example.org')).suppressed).toBe(false);
    });
  });

  it('documents the public routes in the API description', async () => {
    const { body } = await t.http.get('/docs-json').expect(200);
    expect(Object.keys(body.paths['/t/o/{token}'])).toEqual(['get']);
    expect(Object.keys(body.paths['/t/c/{token}'])).toEqual(['get']);
    expect(Object.keys(body.paths['/u/{token}']).sort()).toEqual(['get', 'post']);
    expect(body.paths['/t/c/{token}'].get.responses).toHaveProperty('302');
  });

  const unsubscribePathOf = (mail: ReceivedMail) => pathOf(/^<(.+)>$/.exec(header(mail, 'List-Unsubscribe')!)![1]);
  const suppressionOf = async (email: string) =>
    (await t.http.get('/email/suppression/check').query({ email }).set(bearer(adminKey)).expect(200)).body;
  const tokens = () => t.app.get(TrackingTokens);
});

/** The token with one character of its MAC changed (to another base64url character). */
function changeOneCharacter(token: string): string {
  const i = token.length - 3;
  return token.slice(0, i) + (token[i] === 'A' ? 'B' : 'A') + token.slice(i + 1);
}
