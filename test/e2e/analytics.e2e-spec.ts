import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { periodWindow } from '../../src/analytics/analytics-window';
import { CreateAnalyticsRollups1795443464511 } from '../../src/database/migrations/1795443464511-CreateAnalyticsRollups';
import { NO_FORWARDING, ZERO_DAY, ZERO_EMAIL } from '../support/analytics-zeros';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount, createKey } from '../support/factories';
import { ReceivedMail, SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';
import { postProviderEvents, providerSigner } from '../support/provider-events';

interface StatusEvent {
  type: string;
  recipient?: string;
  machine?: boolean;
}

const SECRET = 'analytics-provider-secret';
const DESKTOP = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36';
const PUBLIC_URL = 'http://mailroom.test';
const HTML = '<html><body><p>Hello</p><a href="https://shop.acme.test/sale">Sale</a></body></html>';

// Analytics (/email/analytics, /analytics) counted from the hourly rollups the database triggers keep: real sends
// through the API to an SMTP sink, real tracking hits, signed provider events and form posts, then the answers are
// checked against what the sink received and what /email/status shows.
describe('analytics', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let acme: { accountId: string; adminKey: string };
  let other: { accountId: string; adminKey: string };
  let fresh: { accountId: string; adminKey: string };
  const marker = randomBytes(4).toString('hex');
  const otherMarker = randomBytes(4).toString('hex');
  const site = 'https://www.acme-analytics.test';
  const provider = providerSigner(SECRET);
  const address = (name: string, mark = marker) => `${name}.${mark}@example.org`;
  /** Every message of Acme, form notifications included: their events are the expected numbers. */
  const acmeMessages: string[] = [];
  let formId: string;
  let otherMessage: string;

  beforeAll(async () => {
    sink = await startSmtpSink();
    t = await createTestApp({
      // Every open is an event here (repeats of one client within the window count once: tracking.e2e-spec.ts).
      env: {
        SMTP_URL: sink.url,
        PROVIDER_WEBHOOK_SECRET: SECRET,
        EMAIL_RETRY_FIRST_DELAY_MS: '200',
        TRUST_PROXY: 'loopback',
        TRACKING_REPEAT_OPEN_WINDOW_MS: '0',
      },
    });
    acme = await createAccount(t, 'Acme');
    other = await createAccount(t, 'Other');
    fresh = await createAccount(t, 'Fresh');
    await createVerifiedDomain(t, acme.accountId, 'acme-analytics.test');
    await createVerifiedDomain(t, other.accountId, 'other-analytics.test');
  });

  afterAll(async () => {
    await t?.close();
    await sink?.close();
  });

  const emailAnalytics = (key: string, query: Record<string, string> = {}) => t.http.get('/email/analytics').query(query).set(bearer(key));
  const overview = (key: string, query: Record<string, string> = {}) => t.http.get('/analytics').query(query).set(bearer(key));

  async function statusOf(messageId: string, key = acme.adminKey): Promise<{ status: string; events: StatusEvent[] }> {
    return (await t.http.get(`/email/status/${messageId}`).set(bearer(key)).expect(200)).body;
  }

  async function waitForEvents(messageId: string, done: (events: StatusEvent[]) => boolean, key = acme.adminKey): Promise<StatusEvent[]> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const { events } = await statusOf(messageId, key);
      if (done(events)) return events;
      if (Date.now() > deadline) throw new Error(`events of ${messageId} never got there: ${JSON.stringify(events)}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  async function send(key: string, body: Record<string, unknown>): Promise<string> {
    const res = await t.http
      .post('/email/send')
      .set(bearer(key))
      .send({ subject: `analytics ${randomBytes(4).toString('hex')}`, ...body });
    expect(res.status).toBe(200);
    return res.body.messageId;
  }

  const sentLongAgo = (messageId: string) =>
    t.app.get(DataSource).query("UPDATE messages SET sent_at = sent_at - interval '1 minute' WHERE id = $1", [messageId]);

  const mailTo = (recipient: string) => sink.waitFor((m) => m.envelope.rcptTo.includes(recipient));
  const pathOf = (url: string) => url.slice(PUBLIC_URL.length);
  const pixelOf = (mail: ReceivedMail) => pathOf(/<img src="([^"]+)"/.exec(mail.parsed!.html as string)![1]);
  const linkOf = (mail: ReceivedMail) => pathOf(/href="([^"]+\/t\/c\/[^"]+)"/.exec(mail.parsed!.html as string)![1]);
  const unsubscribeOf = (mail: ReceivedMail) => {
    const head = mail.raw
      .toString('utf8')
      .split(/\r?\n\r?\n/)[0]
      .replace(/\r?\n[ \t]+/g, ' ');
    return pathOf(/^List-Unsubscribe: <([^>]+)>/im.exec(head)![1]);
  };

  const providerEvents = (events: unknown[]) => postProviderEvents(t.http, provider, events);

  /** The window a named period has now; either side of an hour boundary the request may have crossed. */
  const windowsOf = (period: 'last_24_hours' | 'last_7_days' | 'last_30_days' | 'last_90_days', before: Date) =>
    [periodWindow(period, before), periodWindow(period, new Date())].map((w) => ({ from: w.from.toISOString(), to: w.to.toISOString() }));

  describe('a fresh account', () => {
    it('answers zeros everywhere, rates 0, over the default last_30_days', async () => {
      const before = new Date();
      const res = await emailAnalytics(fresh.adminKey).expect(200);
      expect(res.body).toEqual({ period: 'last_30_days', from: expect.any(String), to: expect.any(String), ...ZERO_EMAIL, forwarded: 0 });
      expect(windowsOf('last_30_days', before)).toContainEqual({ from: res.body.from, to: res.body.to });
      expect(Object.keys(res.body).slice(0, 3)).toEqual(['period', 'from', 'to']);
    });

    it('has a daily series of 30 zero days ending today, and no forms', async () => {
      const res = await overview(fresh.adminKey).expect(200);
      expect(res.body).toMatchObject({ range: 'last_30_days', email: ZERO_EMAIL, forms: { submissions: 0, spam_blocked: 0, by_form: [] } });
      expect(res.body.daily).toHaveLength(30);
      expect(res.body.daily.map(({ date: _date, ...counts }: { date: string }) => counts)).toEqual(Array(30).fill(ZERO_DAY));
      expect(res.body.daily[29].date).toBe(new Date(Date.parse(res.body.to) - 1).toISOString().slice(0, 10));
      expect(res.body.daily[0].date).toBe(res.body.from.slice(0, 10));
    });
  });

  describe('counts', () => {
    let m1: string;
    let m2: string;
    let m3: string;
    let m4: string;

    beforeAll(async () => {
      // A bounce at RCPT (550) for one recipient, a temporary refusal (451) for another: partial sends.
      sink.rejectRecipient(address('gone'), 550);
      sink.rejectRecipient(address('busy'), 451);
      m1 = await send(acme.adminKey, {
        from: 'news@acme-analytics.test',
        to: address('ada'),
        html: HTML,
        tracking: { opens: true, clicks: true, unsubscribe: true },
      });
      m2 = await send(acme.adminKey, {
        from: 'news@acme-analytics.test',
        to: address('bob'),
        cc: address('cy'),
        html: HTML,
        tracking: { opens: true },
      });
      m3 = await send(acme.adminKey, { from: 'news@acme-analytics.test', to: [address('dan'), address('gone')], text: 'hi' });
      m4 = await send(acme.adminKey, { from: 'news@acme-analytics.test', to: [address('eve'), address('busy')], text: 'hi' });
      acmeMessages.push(m1, m2, m3, m4);

      // m4: eve accepted, busy deferred; then the provider takes busy on the retry (a `sent` of the whole rest).
      await waitForEvents(m4, (events) => events.some((e) => e.type === 'deferred'));
      sink.clearRejections();
      await waitForEvents(m4, (events) => events.filter((e) => e.type === 'sent').length === 2);
      await waitForEvents(m3, (events) => events.some((e) => e.type === 'bounced'));
      const [mail1, mail2] = await Promise.all([mailTo(address('ada')), mailTo(address('bob'))]);
      await waitForEvents(m1, (events) => events.some((e) => e.type === 'sent'));
      await waitForEvents(m2, (events) => events.some((e) => e.type === 'sent'));

      // Form posts: two accepted (each sends a notification to the form's owner), one caught by the honeypot.
      const form = await t.http
        .post('/api/forms')
        .set(bearer(acme.adminKey))
        .send({ name: 'Contact', to: address('owner'), subject: 'New message', allowedOrigins: [site], rateLimit: 1000 })
        .expect(201);
      formId = form.body.id;
      const post = (body: Record<string, string>) =>
        t.http.post(`/f/${formId}`).set({ Accept: 'application/json', Origin: site }).send(body).expect(200);
      await post({ message: 'first' });
      await post({ message: 'second' });
      await post({ message: 'buy now', _service_honeypot: 'http://spam.example' });
      const submissions = (await t.http.get(`/api/forms/${formId}/submissions`).set(bearer(acme.adminKey)).expect(200)).body.submissions;
      expect(submissions.map((s: { status: string }) => s.status).sort()).toEqual(['accepted', 'accepted', 'spam']);
      const notifications: string[] = submissions.flatMap((s: { messageIds: string[] }) => s.messageIds);
      expect(notifications).toHaveLength(2);
      acmeMessages.push(...notifications);
      for (const id of notifications) await waitForEvents(id, (events) => events.some((e) => e.type === 'sent'));

      // Opens of m1: one right after sending (a machine: within seconds), then two by a person, one by Apple's proxy.
      const pixel1 = pixelOf(mail1);
      await t.http.get(pixel1).set('User-Agent', DESKTOP).expect(200);
      await sentLongAgo(m1);
      await t.http.get(pixel1).set('User-Agent', DESKTOP).expect(200);
      await t.http.get(pixel1).set('User-Agent', DESKTOP).expect(200);
      await t.http.get(pixel1).set('User-Agent', 'Mozilla/5.0').expect(200);
      // Clicks of m1: two by a person, one by an HTTP library (a scanner).
      const link1 = linkOf(mail1);
      await t.http.get(link1).set('User-Agent', DESKTOP).expect(302);
      await t.http.get(link1).set('User-Agent', DESKTOP).expect(302);
      await t.http.get(link1).set('User-Agent', 'curl/8.5.0').expect(302);
      // Ten concurrent human opens of m2: one unique open.
      await sentLongAgo(m2);
      const pixel2 = pixelOf(mail2);
      await Promise.all(Array.from({ length: 10 }, () => t.http.get(pixel2).set('User-Agent', DESKTOP).expect(200)));
      // One-click unsubscribe from m1.
      await t.http.post(unsubscribeOf(mail1)).type('form').send('List-Unsubscribe=One-Click').expect(200);
      await waitForEvents(
        m1,
        (events) => events.filter((e) => e.type === 'opened').length === 4 && events.filter((e) => e.type === 'clicked').length === 3,
      );
      await waitForEvents(m2, (events) => events.filter((e) => e.type === 'opened').length === 10);

      // The provider reports deliveries, a complaint and a late bounce.
      const res = await providerEvents([
        { messageId: m1, type: 'delivered', recipient: address('ada') },
        { messageId: m2, type: 'delivered', recipient: address('bob') },
        { messageId: m2, type: 'delivered', recipient: address('cy') },
        { messageId: m3, type: 'delivered', recipient: address('dan') },
        { messageId: m1, type: 'complained', recipient: address('ada') },
        { messageId: m4, type: 'bounced', recipient: address('eve'), reason: '550 5.1.1 gone since' },
      ]).expect(202);
      expect(res.body).toEqual({ received: 6, applied: 6, ignored: 0 });

      // Another account's activity, which Acme must never see.
      const o1 = await send(other.adminKey, {
        from: 'hi@other-analytics.test',
        to: address('zed', otherMarker),
        html: HTML,
        tracking: { opens: true },
      });
      const otherMail = await mailTo(address('zed', otherMarker));
      await waitForEvents(o1, (events) => events.some((e) => e.type === 'sent'), other.adminKey);
      await sentLongAgo(o1);
      await t.http.get(pixelOf(otherMail)).set('User-Agent', DESKTOP).expect(200);
      await waitForEvents(o1, (events) => events.some((e) => e.type === 'opened'), other.adminKey);
      otherMessage = o1;
    });

    const EXPECTED = {
      // m1 1 + m2 2 (one `sent` for both) + m3 1 (gone bounced at RCPT) + m4 2 (eve, then busy on the retry) + 2 notifications
      emails_sent: 8,
      delivered: 4,
      bounced: 2,
      complaints: 1,
      opens: 12,
      clicks: 2,
      unsubscribes: 1,
      delivery_rate: 50,
      open_rate: 25,
      click_rate: 12.5,
      unique_opens: 2,
      machine_opens: 2,
      unique_clicks: 1,
      machine_clicks: 1,
    };

    it('equals what the SMTP sink received and what the messages’ events show', async () => {
      const res = await emailAnalytics(acme.adminKey, { period: 'last_24_hours' }).expect(200);
      expect(res.body).toEqual({ period: 'last_24_hours', from: expect.any(String), to: expect.any(String), ...EXPECTED, forwarded: 0 });

      // Every recipient the sink accepted for Acme (rejected RCPTs are not in the envelope).
      const received = sink.messages.flatMap((m) => m.envelope.rcptTo).filter((r) => r.includes(marker));
      expect(res.body.emails_sent).toBe(received.length);
      expect(received.sort()).toEqual(['ada', 'bob', 'busy', 'cy', 'dan', 'eve', 'owner', 'owner'].map((name) => address(name)));

      const events = (await Promise.all(acmeMessages.map(async (id) => (await statusOf(id)).events))).flat();
      const count = (type: string, machine?: boolean) =>
        events.filter((e) => e.type === type && (machine === undefined || (e.machine ?? false) === machine)).length;
      expect({
        delivered: count('delivered'),
        bounced: count('bounced'),
        complaints: count('complained'),
        unsubscribes: count('unsubscribed'),
        opens: count('opened', false),
        machine_opens: count('opened', true),
        clicks: count('clicked', false),
        machine_clicks: count('clicked', true),
      }).toEqual({
        delivered: res.body.delivered,
        bounced: res.body.bounced,
        complaints: res.body.complaints,
        unsubscribes: res.body.unsubscribes,
        opens: res.body.opens,
        machine_opens: res.body.machine_opens,
        clicks: res.body.clicks,
        machine_clicks: res.body.machine_clicks,
      });
      // m4's `sent` events: eve's alone, then one of the whole rest (busy) on the retry.
      expect(events.filter((e) => e.type === 'sent' && e.recipient === address('eve'))).toHaveLength(1);
    });

    it('is the same over every period that holds today, and from/to around now', async () => {
      for (const period of ['last_7_days', 'last_30_days', 'last_90_days']) {
        const before = new Date();
        const res = await emailAnalytics(acme.adminKey, { period }).expect(200);
        expect(res.body).toEqual({ period, from: expect.any(String), to: expect.any(String), ...EXPECTED, forwarded: 0 });
        expect(windowsOf(period as 'last_7_days', before)).toContainEqual({ from: res.body.from, to: res.body.to });
      }
      const from = new Date(Date.now() - 2 * 3_600_000);
      const to = new Date(Date.now() + 3_600_000);
      const res = await emailAnalytics(acme.adminKey, { from: from.toISOString(), to: to.toISOString() }).expect(200);
      expect(res.body).toEqual({
        period: 'custom',
        from: new Date(Math.floor(from.getTime() / 3_600_000) * 3_600_000).toISOString(),
        to: new Date(Math.ceil(to.getTime() / 3_600_000) * 3_600_000).toISOString(),
        ...EXPECTED,
        forwarded: 0,
      });
    });

    it('counts nothing in a window before anything happened', async () => {
      const res = await emailAnalytics(acme.adminKey, { from: '2026-01-01T10:30:00Z', to: '2026-01-04' }).expect(200);
      expect(res.body).toEqual({
        period: 'custom',
        from: '2026-01-01T10:00:00.000Z',
        to: '2026-01-04T00:00:00.000Z',
        ...ZERO_EMAIL,
        forwarded: 0,
      });
    });

    it('never includes another account’s numbers, and shows that account its own', async () => {
      const res = await emailAnalytics(other.adminKey).expect(200);
      expect(res.body).toEqual({
        period: 'last_30_days',
        from: expect.any(String),
        to: expect.any(String),
        ...ZERO_EMAIL,
        emails_sent: 1,
        opens: 1,
        unique_opens: 1,
        open_rate: 100,
        forwarded: 0,
      });
      const page = await overview(other.adminKey).expect(200);
      expect(page.body.forms).toEqual({ submissions: 0, spam_blocked: 0, by_form: [] });
      expect((await emailAnalytics(fresh.adminKey).expect(200)).body).toMatchObject(ZERO_EMAIL);
    });

    it('reads whole past days from the daily rollup and the hours at a window’s ends from the hourly one', async () => {
      // Events of days past, which no route can backdate, written as any writer would (the triggers count them).
      const day = new Date(Date.now() - 3 * 86_400_000).toISOString().slice(0, 10);
      const next = new Date(Date.parse(`${day}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
      await t.app.get(DataSource).query(
        `INSERT INTO message_events (message_id, type, recipient, machine, occurred_at)
         VALUES ($1, 'delivered', $2, false, $3), ($1, 'opened', NULL, false, $4)`,
        [otherMessage, address('zed', otherMarker), `${day}T10:30:00Z`, `${day}T22:15:00Z`],
      );
      const counts = async (query: Record<string, string>) => {
        const { delivered, opens, unique_opens } = (await emailAnalytics(other.adminKey, query).expect(200)).body;
        return { delivered, opens, unique_opens };
      };
      // The later-inserted open of a message opened already is not unique, whatever its time.
      expect(await counts({ period: 'last_7_days' })).toEqual({ delivered: 1, opens: 2, unique_opens: 1 });
      expect(await counts({ period: 'last_24_hours' })).toEqual({ delivered: 0, opens: 1, unique_opens: 1 });
      expect(await counts({ from: day, to: next })).toEqual({ delivered: 1, opens: 1, unique_opens: 0 });
      expect(await counts({ from: `${day}T10:00:00Z`, to: `${day}T11:00:00Z` })).toEqual({ delivered: 1, opens: 0, unique_opens: 0 });
      expect(await counts({ from: `${day}T10:31:00Z`, to: `${next}T05:00:00Z` })).toEqual({ delivered: 1, opens: 1, unique_opens: 0 });
      expect(await counts({ from: `${day}T11:00:00Z`, to: `${next}T05:00:00Z` })).toEqual({ delivered: 0, opens: 1, unique_opens: 0 });
      const before = new Date(Date.parse(`${day}T12:00:00Z`) - 86_400_000).toISOString();
      expect(await counts({ from: before, to: `${next}T23:00:00Z` })).toEqual({ delivered: 1, opens: 1, unique_opens: 0 });

      const page = await overview(other.adminKey, { range: '7d' }).expect(200);
      expect(page.body.email).toMatchObject({ emails_sent: 1, delivered: 1, opens: 2, unique_opens: 1 });
      expect(page.body.daily.find((d: { date: string }) => d.date === day)).toEqual({ ...ZERO_DAY, date: day, delivered: 1, opens: 1 });
      expect(page.body.daily.filter((d: typeof ZERO_DAY) => d.delivered > 0 || d.opens > 0)).toHaveLength(2);
    });

    it('answers a usage key on /email/analytics with the same numbers, refuses it on /analytics', async () => {
      const usage = await createKey(t, acme.adminKey, { keyType: 'usage' });
      expect((await emailAnalytics(usage.key).expect(200)).body).toMatchObject(EXPECTED);
      const refused = await overview(usage.key).expect(403);
      expect(refused.body.error.code).toBe('FORBIDDEN');

      const sender = await createKey(t, acme.adminKey, { keyType: 'usage', permissions: ['email.send'] });
      expect((await emailAnalytics(sender.key).expect(403)).body.error.code).toBe('FORBIDDEN');
      const narrowAdmin = await createKey(t, acme.adminKey, { keyType: 'admin', permissions: ['email.read'] });
      expect((await overview(narrowAdmin.key).expect(403)).body.error.code).toBe('FORBIDDEN');
      expect((await t.http.get('/email/analytics').expect(401)).body.error.code).toBe('AUTH_MISSING');
    });

    describe('GET /analytics', () => {
      it('has the email summary, the forms and a daily series of every day of the range', async () => {
        const res = await overview(acme.adminKey, { range: '7d' }).expect(200);
        expect(res.body).toEqual({
          range: 'last_7_days',
          from: expect.any(String),
          to: expect.any(String),
          email: EXPECTED,
          forms: { submissions: 2, spam_blocked: 1, by_form: [{ form_id: formId, name: 'Contact', submissions: 2, spam_blocked: 1 }] },
          forwarding: NO_FORWARDING,
          daily: expect.any(Array),
        });
        const daily: (typeof ZERO_DAY & { date: string })[] = res.body.daily;
        expect(daily).toHaveLength(7);
        expect(daily[0].date).toBe(res.body.from.slice(0, 10));
        const dates = daily.map((d) => Date.parse(`${d.date}T00:00:00Z`));
        expect(dates.slice(1).map((d, i) => d - dates[i])).toEqual(Array(6).fill(86_400_000));
        const sum = (key: keyof typeof ZERO_DAY) => daily.reduce((total, d) => total + d[key], 0);
        expect({
          emails_sent: sum('emails_sent'),
          delivered: sum('delivered'),
          bounced: sum('bounced'),
          complaints: sum('complaints'),
          opens: sum('opens'),
          clicks: sum('clicks'),
          unsubscribes: sum('unsubscribes'),
          submissions: sum('submissions'),
          spam_blocked: sum('spam_blocked'),
        }).toEqual({
          emails_sent: 8,
          delivered: 4,
          bounced: 2,
          complaints: 1,
          opens: 12,
          clicks: 2,
          unsubscribes: 1,
          submissions: 2,
          spam_blocked: 1,
        });
        // Everything happened today (or yesterday, if the run crossed midnight UTC): the days before are zeros.
        const { date: _date, ...first } = daily[0];
        expect(first).toEqual(ZERO_DAY);
        expect(daily.slice(0, 5).every((d) => d.emails_sent === 0 && d.submissions === 0)).toBe(true);
      });

      it('takes every name of a range, and from/to', async () => {
        for (const [range, name, days] of [
          ['24h', 'last_24_hours', [1, 2]],
          ['30d', 'last_30_days', [30]],
          ['last_90_days', 'last_90_days', [90]],
          ['90d', 'last_90_days', [90]],
        ] as const) {
          const res = await overview(acme.adminKey, { range }).expect(200);
          expect(res.body.range).toBe(name);
          expect(res.body.email).toEqual(EXPECTED);
          expect(days).toContain(res.body.daily.length);
        }
        const old = await overview(acme.adminKey, { from: '2026-01-01', to: '2026-01-04' }).expect(200);
        expect(old.body).toEqual({
          range: 'custom',
          from: '2026-01-01T00:00:00.000Z',
          to: '2026-01-04T00:00:00.000Z',
          email: ZERO_EMAIL,
          forms: { submissions: 0, spam_blocked: 0, by_form: [] },
          forwarding: NO_FORWARDING,
          daily: ['2026-01-01', '2026-01-02', '2026-01-03'].map((date) => ({ date, ...ZERO_DAY })),
        });
      });
    });

    it('rebuilds the same rollups from the events when the migration runs again (the backfill of an upgrade)', async () => {
      const db = t.app.get(DataSource);
      const snapshot = async () => ({
        email: await db.query('SELECT * FROM email_stats_hourly ORDER BY account_id, hour'),
        forms: await db.query('SELECT * FROM form_stats_hourly ORDER BY account_id, hour, form_id'),
        emailDays: await db.query('SELECT * FROM email_stats_daily ORDER BY account_id, day'),
        formDays: await db.query('SELECT * FROM form_stats_daily ORDER BY account_id, day, form_id'),
        engagements: await db.query('SELECT message_id, type FROM message_engagements ORDER BY message_id, type'),
      });
      const before = await snapshot();
      expect(before.email.length).toBeGreaterThanOrEqual(2);
      expect(before.engagements).toHaveLength(4); // m1 opened and clicked, m2 opened, Other's message opened
      expect(before.emailDays.length).toBeGreaterThanOrEqual(3); // today's of both accounts and Other's day past

      const migration = new CreateAnalyticsRollups1795443464511();
      const runner = db.createQueryRunner();
      await runner.startTransaction();
      try {
        await migration.down(runner);
        await migration.up(runner);
        await runner.commitTransaction();
      } catch (err) {
        await runner.rollbackTransaction();
        throw err;
      } finally {
        await runner.release();
      }
      expect(await snapshot()).toEqual(before);
      // The triggers are back: a new event counts.
      await providerEvents([{ messageId: acmeMessages[3], type: 'delivered', recipient: address('busy') }]).expect(202);
      expect((await emailAnalytics(acme.adminKey).expect(200)).body.delivered).toBe(5);
    });

    it('forgets a deleted form’s submissions, as the form takes them with it', async () => {
      await t.http.delete(`/api/forms/${formId}`).set(bearer(acme.adminKey)).expect(200);
      const res = await overview(acme.adminKey).expect(200);
      expect(res.body.forms).toEqual({ submissions: 0, spam_blocked: 0, by_form: [] });
      // Its notifications were emails of the account all the same.
      expect(res.body.email.emails_sent).toBe(8);
    });
  });

  it('documents both routes, their parameters and every answer field in Swagger', async () => {
    const { body } = await t.http.get('/docs-json').expect(200);
    const email = body.paths['/email/analytics'].get;
    const overviewRoute = body.paths['/analytics'].get;
    expect(email.parameters.map((p: { name: string }) => p.name).sort()).toEqual(['from', 'period', 'to']);
    expect(overviewRoute.parameters.map((p: { name: string }) => p.name).sort()).toEqual(['from', 'range', 'to']);
    expect(email.parameters.find((p: { name: string }) => p.name === 'period').schema.enum).toEqual([
      'last_24_hours',
      'last_7_days',
      'last_30_days',
      'last_90_days',
    ]);
    const summary = body.components.schemas.EmailAnalyticsDto;
    expect(Object.keys(summary.properties).sort()).toEqual(['period', 'from', 'to', ...Object.keys(ZERO_EMAIL), 'forwarded'].sort());
    expect(summary.properties.delivery_rate.description).toContain('0 when nothing was sent');
    expect(Object.keys(body.components.schemas.AnalyticsOverviewDto.properties).sort()).toEqual([
      'daily',
      'email',
      'forms',
      'forwarding',
      'from',
      'range',
      'to',
    ]);
  });

  describe('validation', () => {
    const expectInvalid = (res: { status: number; body: any }, fields: { field: string; message: string }[]) => {
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        error: { code: 'VALIDATION_FAILED', message: expect.any(String), details: { fields } },
        documentation: expect.any(String),
      });
    };

    it('refuses an unknown period, listing the accepted values', async () => {
      expectInvalid(await emailAnalytics(acme.adminKey, { period: 'last_week' }), [
        { field: 'period', message: 'period must be one of last_24_hours, last_7_days, last_30_days, last_90_days (or give from and to)' },
      ]);
      expectInvalid(await overview(acme.adminKey, { range: '1y' }), [
        {
          field: 'range',
          message: 'range must be one of last_24_hours, last_7_days, last_30_days, last_90_days, 24h, 7d, 30d, 90d (or give from and to)',
        },
      ]);
    });

    it('wants from and to together, ISO 8601, in order, at most 366 days apart, and not with a period', async () => {
      expectInvalid(await emailAnalytics(acme.adminKey, { from: '2026-11-01' }), [{ field: 'to', message: 'to is required with from' }]);
      expectInvalid(await overview(acme.adminKey, { to: '2026-11-01' }), [{ field: 'from', message: 'from is required with to' }]);
      expectInvalid(await emailAnalytics(acme.adminKey, { from: 'last monday', to: '2026-11-01' }), [
        { field: 'from', message: 'from must be an ISO 8601 date or date-time (2026-11-01 or 2026-11-01T09:00:00Z)' },
      ]);
      const order = [{ field: 'to', message: 'to must be later than from, and at most 366 days after it' }];
      expectInvalid(await emailAnalytics(acme.adminKey, { from: '2026-11-02', to: '2026-11-01' }), order);
      expectInvalid(await overview(acme.adminKey, { from: '2025-01-01', to: '2026-01-03' }), order);
      expectInvalid(await emailAnalytics(acme.adminKey, { period: 'last_7_days', from: '2026-11-01', to: '2026-11-02' }), [
        { field: 'period', message: 'period cannot be combined with from and to' },
      ]);
      expectInvalid(await emailAnalytics(acme.adminKey, { range: '7d' }), [{ field: 'range', message: 'property range should not exist' }]);
    });
  });
});
