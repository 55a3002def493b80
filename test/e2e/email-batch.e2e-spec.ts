import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { TrackingTokens } from '../../src/tracking/tracking-tokens';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount, createKey } from '../support/factories';
import { SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';

describe('POST /email/batch', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let adminKey: string;
  let usageKey: string;
  const domain = 'batch.acme.test';

  beforeAll(async () => {
    sink = await startSmtpSink();
    t = await createTestApp({ env: { SMTP_URL: sink.url } });
    const account = await createAccount(t, 'Sender');
    adminKey = account.adminKey;
    usageKey = (await createKey(t, adminKey, { keyType: 'usage' })).key;
    await createVerifiedDomain(t, account.accountId, domain);
  });
  afterAll(async () => {
    await t.close();
    await sink.close();
  });

  const batch = (body: object, headers: Record<string, string> = {}) =>
    t.http
      .post('/email/batch')
      .set(bearer(usageKey))
      .set(headers)
      .send({ from: `Acme <hello@${domain}>`, ...body });
  const messagesWith = async (subjectPrefix: string): Promise<number> => {
    const rows: { n: number }[] = await t.app
      .get(DataSource)
      .query('SELECT count(*)::int AS n FROM messages WHERE subject LIKE $1', [`${subjectPrefix}%`]);
    return rows[0].n;
  };

  async function statusOf(messageId: string): Promise<{ status: string; events: { type: string }[] }> {
    return (await t.http.get(`/email/status/${messageId}`).set(bearer(adminKey)).expect(200)).body;
  }

  it('sends one message per recipient, rendered with its own variables, answered in recipient order', async () => {
    const tag = `welcome-${randomBytes(4).toString('hex')}`;
    await t.http
      .post('/email/templates')
      .set(bearer(adminKey))
      .send({
        name: tag,
        subject: `${tag} {{name}}`,
        text: 'Hi {{name}}, your plan is {{plan}}. {{unsubscribeUrl}}',
        html: '<p>{{plan}} for {{email}}</p>',
      })
      .expect(201);
    const recipients = [
      { email: 'ada@example.org', name: 'Ada', variables: { plan: 'Pro' } },
      { email: 'grace@example.org', name: 'Grace', variables: { plan: 'Team' } },
      { email: 'linus@example.org', variables: { plan: 'Free' } },
    ];
    const res = await batch({ template: tag, recipients, metadata: { campaign: tag } }).expect(200);
    expect(res.body).toEqual({
      success: true,
      data: recipients.map(({ email }) => ({ email, messageId: expect.stringMatching(/^msg_[0-9A-Za-z]{22}$/), status: 'queued' })),
    });
    const ids: string[] = res.body.data.map((d: { messageId: string }) => d.messageId);
    expect(new Set(ids).size).toBe(3);

    const expected = [
      { subject: `${tag} Ada`, text: 'Hi Ada, your plan is Pro.', html: '<p>Pro for ada@example.org</p>' },
      { subject: `${tag} Grace`, text: 'Hi Grace, your plan is Team.', html: '<p>Team for grace@example.org</p>' },
      // No name given, neither beside the address nor in its variables: {{name}} is empty.
      { subject: tag, text: 'Hi , your plan is Free.', html: '<p>Free for linus@example.org</p>' },
    ];
    const mails = await Promise.all(expected.map(({ subject }) => sink.waitFor((m) => m.parsed?.subject === subject)));
    const urls = mails.map((mail, i) => {
      expect(mail.envelope.rcptTo).toEqual([recipients[i].email]);
      expect(mail.parsed!.text).toContain(expected[i].text);
      expect(mail.parsed!.html).toContain(expected[i].html);
      return /(http:\/\/mailroom\.test\/u\/\S+)/.exec(mail.parsed!.text ?? '')?.[1];
    });
    expect(urls.every(Boolean)).toBe(true);
    expect(new Set(urls).size).toBe(3);

    for (const id of ids) {
      let status = await statusOf(id);
      for (let i = 0; i < 100 && status.status !== 'sent'; i++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        status = await statusOf(id);
      }
      expect(status.status).toBe('sent');
      expect(status.events.map((e) => e.type).slice(0, 2)).toEqual(['queued', 'sent']);
    }
  });

  it("keeps a name the recipient's variables give (the spec's batch shape): no top-level name does not blank it", async () => {
    const tag = `news-${randomBytes(4).toString('hex')}`;
    await t.http
      .post('/email/templates')
      .set(bearer(adminKey))
      .send({ name: tag, subject: 'News for {{name}}', text: `Dear {{name}}, ${tag}` })
      .expect(201);
    const res = await batch({
      template: tag,
      recipients: [
        { email: 'ann@example.org', variables: { name: 'Ann' } },
        { email: 'bob@example.org', name: 'Robert', variables: { name: 'Bob' } },
        { email: 'cy@example.org', name: 'Cy', variables: {} },
      ],
    }).expect(200);
    expect(res.body.data.map((d: { status: string }) => d.status)).toEqual(['queued', 'queued', 'queued']);
    const received = (address: string) => sink.waitFor((m) => m.envelope.rcptTo.includes(address) && (m.parsed?.text ?? '').includes(tag));
    const [ann, bob, cy] = await Promise.all(['ann@example.org', 'bob@example.org', 'cy@example.org'].map(received));
    expect(ann.parsed!.subject).toBe('News for Ann');
    expect(ann.parsed!.text).toContain(`Dear Ann, ${tag}`);
    // The recipient's own variables win over its top-level name; the top-level name fills in what they leave out.
    expect(bob.parsed!.subject).toBe('News for Bob');
    expect(bob.parsed!.text).toContain(`Dear Bob, ${tag}`);
    expect(cy.parsed!.subject).toBe('News for Cy');
    expect(cy.parsed!.text).toContain(`Dear Cy, ${tag}`);
  });

  it('renders inline subject, html and text as templates', async () => {
    const tag = `inline-${randomBytes(4).toString('hex')}`;
    const res = await batch({
      subject: `${tag} {{greeting}}, {{name}}`,
      text: '{{#items}}- {{.}}\n{{/items}}',
      recipients: [{ email: 'ada@example.org', name: 'Ada', variables: { greeting: 'Hello', items: ['one', 'two'] } }],
    }).expect(200);
    expect(res.body.data[0].status).toBe('queued');
    const mail = await sink.waitFor((m) => m.parsed?.subject === `${tag} Hello, Ada`);
    expect(mail.parsed!.text).toContain('- one\n- two');
  });

  it('refuses the whole batch when a recipient is invalid, naming each one, and sends nothing', async () => {
    const tag = `invalid-${randomBytes(4).toString('hex')}`;
    const res = await batch({
      subject: `${tag} {{name}}`,
      text: 'x',
      recipients: [
        { email: 'ada@example.org' },
        { email: 'not an address' },
        { email: 'grace@example.org', name: 'Bad\nName' },
        { email: 'linus@' },
      ],
    }).expect(400);
    expect(res.body.error.code).toBe('VALIDATION_FAILED');
    expect(res.body.error.details.fields.map((f: { field: string }) => f.field)).toEqual([
      'recipients[1].email',
      'recipients[2].name',
      'recipients[3].email',
    ]);
    expect(await messagesWith(tag)).toBe(0);
  });

  it('takes at most 500 recipients', async () => {
    const tag = `many-${randomBytes(4).toString('hex')}`;
    const recipients = Array.from({ length: 501 }, (_, i) => ({ email: `r${i}@example.org` }));
    const res = await batch({ subject: tag, text: 'x', recipients }).expect(400);
    expect(res.body.error.details.fields).toEqual([{ field: 'recipients', message: expect.stringContaining('500') }]);
    expect((await batch({ subject: tag, text: 'x', recipients: [] }).expect(400)).body.error.details.fields[0].field).toBe('recipients');
    expect(await messagesWith(tag)).toBe(0);
  });

  it('answers suppressed recipients as suppressed, without a message', async () => {
    const tag = `suppressed-${randomBytes(4).toString('hex')}`;
    await t.http.post('/email/suppression').set(bearer(adminKey)).send({ email: 'blocked@example.org', reason: 'complained' }).expect(201);
    const res = await batch({
      subject: `${tag} {{email}}`,
      text: 'x',
      recipients: [{ email: 'Blocked@example.org' }, { email: 'open@example.org' }],
    }).expect(200);
    expect(res.body.data).toEqual([
      { email: 'Blocked@example.org', messageId: null, status: 'suppressed' },
      { email: 'open@example.org', messageId: expect.stringMatching(/^msg_/), status: 'queued' },
    ]);
    await sink.waitFor((m) => m.parsed?.subject === `${tag} open@example.org`);
    expect(await messagesWith(tag)).toBe(1);

    const all = await batch({ subject: `${tag} again`, text: 'x', recipients: [{ email: 'blocked@example.org' }] }).expect(200);
    expect(all.body.data).toEqual([{ email: 'blocked@example.org', messageId: null, status: 'suppressed' }]);
  });

  it('schedules every message of a scheduled batch', async () => {
    const tag = `scheduled-${randomBytes(4).toString('hex')}`;
    const at = new Date(Date.now() + 3600_000).toISOString();
    const res = await batch({
      subject: tag,
      text: 'x',
      scheduleFor: at,
      recipients: [{ email: 'a@example.org' }, { email: 'b@example.org' }],
    }).expect(200);
    expect(res.body.data.map((d: { status: string }) => d.status)).toEqual(['scheduled', 'scheduled']);
    const status = await statusOf(res.body.data[0].messageId);
    expect(status.status).toBe('scheduled');
  });

  it('answers a repeated Idempotency-Key with the first answer and sends nothing more; another body is 409', async () => {
    const tag = `idem-${randomBytes(4).toString('hex')}`;
    const body = { subject: `${tag} {{email}}`, text: 'x', recipients: [{ email: 'ada@example.org' }, { email: 'grace@example.org' }] };
    const key = { 'Idempotency-Key': `batch-${tag}` };
    const first = await batch(body, key).expect(200);
    const again = await batch(body, key).expect(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toEqual(first.body);
    expect(await messagesWith(tag)).toBe(2);
    const other = await batch({ ...body, text: 'changed' }, key).expect(409);
    expect(other.body.error.code).toBe('IDEMPOTENCY_CONFLICT');
  });

  it('gives the template of a tracked single send its own unsubscribe link, and none to an untracked one', async () => {
    const tag = `tracked-${randomBytes(4).toString('hex')}`;
    await t.http
      .post('/email/templates')
      .set(bearer(adminKey))
      .send({ name: tag, subject: '{{kind}} ' + tag, text: 'Leave: [{{unsubscribeUrl}}]' })
      .expect(201);
    const send = (kind: string, tracking?: object) =>
      t.http
        .post('/email/send')
        .set(bearer(usageKey))
        .send({ from: `hello@${domain}`, to: 'ada@example.org', template: tag, variables: { kind }, ...(tracking ? { tracking } : {}) })
        .expect(200);
    const tracked = await send('tracked', { unsubscribe: true });
    await send('plain');
    const trackedMail = await sink.waitFor((m) => m.parsed?.subject === `tracked ${tag}`);
    const url = /\[(\S*)\]/.exec(trackedMail.parsed!.text ?? '')?.[1] ?? '';
    expect(url).toMatch(/^http:\/\/mailroom\.test\/u\//);
    // Delivery gives the recipient's copy a link naming that recipient (issue 35).
    const target = t.app.get(TrackingTokens).verify('u', url.slice('http://mailroom.test/u/'.length));
    expect(target).toEqual({ kind: 'u', messageId: tracked.body.messageId, recipient: expect.any(String) });
    expect(t.app.get(TrackingTokens).recipientOf(tracked.body.messageId, target!.recipient!, ['ada@example.org'])).toBe('ada@example.org');
    const plainMail = await sink.waitFor((m) => m.parsed?.subject === `plain ${tag}`);
    expect(plainMail.parsed!.text).toContain('Leave: []');
  });

  it('checks the sender like a send: unverified domain 403, unknown template 404', async () => {
    const recipients = [{ email: 'ada@example.org' }];
    expect((await batch({ from: 'x@unverified.example.com', subject: 's', text: 'x', recipients }).expect(403)).body.error.code).toBe(
      'DOMAIN_NOT_VERIFIED',
    );
    expect((await batch({ template: 'missing', recipients }).expect(404)).body.error.code).toBe('NOT_FOUND');
    const noContent = await batch({ recipients }).expect(400);
    expect(noContent.body.error.details.fields.map((f: { field: string }) => f.field)).toEqual(['subject', 'text']);
  });
});
