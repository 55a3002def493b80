import { TestDnsServer, startDnsServer } from '../support/dns-server';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount } from '../support/factories';
import { SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';
import { TemplatesService } from '../../src/templates/templates.service';

describe('form templates', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let dns: TestDnsServer;
  let adminKey: string;
  let accountId: string;
  const domain = 'mail.forms.test';

  beforeAll(async () => {
    sink = await startSmtpSink();
    dns = await startDnsServer();
    t = await createTestApp({ env: { SMTP_URL: sink.url } });
    const account = await createAccount(t, 'Forms');
    adminKey = account.adminKey;
    accountId = account.accountId;
    await createVerifiedDomain(t, accountId, domain, dns);
  });
  afterAll(async () => {
    await t.close();
    await sink.close();
    await dns.close();
  });

  const contact = {
    name: 'contact',
    type: 'form',
    subject: 'New message from {{ form.name || "someone" }}',
    html: '<p>{{ form.message | nl2br }}</p>{% if form.phone %}<p>{{ form.phone }}</p>{% endif %}<p>{{ timestamp | date: "%Y-%m-%d" }}</p>',
    text: 'From {{ form.name }} on {{ domain }}',
  };

  it('stores, previews and refuses to send form templates', async () => {
    const created = await t.http.post('/email/templates').set(bearer(adminKey)).send(contact).expect(201);
    expect(created.body).toMatchObject({ name: 'contact', type: 'form' });
    const email = await t.http.post('/email/templates').set(bearer(adminKey)).send({ name: 'plain', subject: 's', text: 't' }).expect(201);
    expect(email.body.type).toBe('email');

    const preview = await t.http
      .post('/email/templates/contact/render')
      .set(bearer(adminKey))
      .send({
        variables: {
          form: { name: 'Ada\r\nBcc: x', message: '<b>hi</b>\nthere' },
          domain: 'example.com',
          timestamp: '2024-05-06T23:30:00Z',
        },
      })
      .expect(200);
    expect(preview.body).toEqual({
      subject: 'New message from Ada Bcc: x',
      html: '<p>&lt;b&gt;hi&lt;/b&gt;<br>there</p><p>2024-05-06</p>',
      text: 'From Ada\r\nBcc: x on example.com',
    });

    const bad = await t.http
      .post('/email/templates')
      .set(bearer(adminKey))
      .send({ ...contact, name: 'bad', html: '<p>\n{% if form.a %}' })
      .expect(400);
    expect(bad.body.error.details.fields).toEqual([{ field: 'html', message: expect.stringMatching(/^line 2: tag .* not closed/) }]);
    const badType = await t.http
      .post('/email/templates')
      .set(bearer(adminKey))
      .send({ ...contact, name: 'bad', type: 'sms' })
      .expect(400);
    expect(badType.body.error.details.fields.map((f: { field: string }) => f.field)).toEqual(['type']);

    // Changing the type re-checks the content in the new language.
    await t.http.put('/email/templates/plain').set(bearer(adminKey)).send({ type: 'acknowledgment', text: '{{#x}}y{{/x}}' }).expect(400);
    const ack = await t.http
      .put('/email/templates/plain')
      .set(bearer(adminKey))
      .send({ type: 'acknowledgment', text: 'Thanks {{ form.name }}' })
      .expect(200);
    expect(ack.body.type).toBe('acknowledgment');

    const send = await t.http
      .post('/email/send')
      .set(bearer(adminKey))
      .send({ from: `hello@${domain}`, to: 'ada@example.org', template: 'contact' })
      .expect(400);
    expect(send.body.error.details.fields).toEqual([{ field: 'template', message: expect.stringMatching(/^contact is a form template/) }]);

    const service = t.app.get(TemplatesService);
    expect((await service.findForForm(accountId, 'contact'))?.type).toBe('form');
    expect((await service.findForForm(accountId, 'plain'))?.type).toBe('acknowledgment');
    await t.http.post('/email/templates').set(bearer(adminKey)).send({ name: 'mail', subject: 's', text: 't' }).expect(201);
    expect(await service.findForForm(accountId, 'mail')).toBeNull();
    expect(await service.findForForm(accountId, 'nope')).toBeNull();
    expect(await service.findForForm('acc_other', 'contact')).toBeNull();
  });
});
