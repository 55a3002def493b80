import {
  renderAcknowledgment,
  renderNotification,
  RenderBudget,
  SubmissionEmailContext,
  submissionTemplateContext,
} from './submission-emails';

function submission(overrides: Partial<SubmissionEmailContext> = {}): SubmissionEmailContext {
  return {
    formName: 'Contact',
    domain: 'example.com',
    fields: { name: 'Ada', email: 'ada@example.org', message: 'Hello,\nsecond line', topics: ['billing', 'api'] },
    ip: '203.0.113.9',
    timestamp: '2024-05-06T23:30:00.000Z',
    submissionId: 'sub_123',
    files: [],
    ...overrides,
  };
}

const evil = '<script>alert(1)</script>';

describe('default notification', () => {
  it('lists every field in the text part, multi-line values indented, then files and the footer', () => {
    const email = renderNotification(
      submission({
        files: [
          { filename: 'cv.pdf', size: 12_800 },
          { filename: 'a.png', size: 300 },
        ],
      }),
    );
    expect(email.subject).toBe('New submission: Contact');
    expect(email.text).toBe(
      [
        'New submission: Contact',
        '',
        'A form on example.com was submitted.',
        '',
        'name: Ada',
        'email: ada@example.org',
        'message:',
        '  Hello,',
        '  second line',
        'topics: billing, api',
        '',
        'Files:',
        '  cv.pdf (12.5 KB)',
        '  a.png (300 B)',
        '',
        '-- ',
        'Submitted 2024-05-06T23:30:00.000Z from 203.0.113.9 · submission sub_123',
        '',
      ].join('\n'),
    );
  });

  it('shows every field in an HTML table with inline styles only', () => {
    const { html } = renderNotification(submission());
    for (const cell of [
      '>name</td>',
      '>Ada</td>',
      '>email</td>',
      '>ada@example.org</td>',
      '>Hello,<br>second line</td>',
      '>billing, api</td>',
    ]) {
      expect(html).toContain(cell);
    }
    expect(html).toContain('Submitted 2024-05-06T23:30:00.000Z from 203.0.113.9 · submission sub_123');
    expect(html).not.toMatch(/<link|<style|<img|src=|url\(/i);
    expect(html!.startsWith('<!DOCTYPE html>')).toBe(true);
  });

  it('never shows control fields', () => {
    const email = renderNotification(submission({ fields: { name: 'Ada', _subject: 'S', _replyto: 'r@example.org' } }));
    expect(email.text).not.toMatch(/_subject|_replyto|r@example\.org/);
    expect(email.html).not.toMatch(/_subject|_replyto|r@example\.org/);
    expect(submissionTemplateContext(submission({ fields: { a: '1', _redirect: 'x' } })).form).toEqual({ a: '1' });
  });

  it('links a stored upload’s name to its download, only for an http(s) link', () => {
    const email = renderNotification(
      submission({
        files: [
          { filename: 'cv.pdf', size: 300, url: 'https://forms.example/forms/files/tok?x=1&y=2' },
          { filename: 'b.txt', size: 1, url: 'javascript:alert(1)' },
        ],
      }),
    );
    expect(email.text).toContain('  cv.pdf (300 B): https://forms.example/forms/files/tok?x=1&y=2\n  b.txt (1 B)\n');
    expect(email.html).toContain('<a href="https://forms.example/forms/files/tok?x=1&amp;y=2" style="color:#0969da;">cv.pdf</a> (300 B)');
    expect(email.html).not.toContain('javascript:');
  });

  it('says so when there are no fields', () => {
    const email = renderNotification(submission({ fields: {} }));
    expect(email.text).toContain('(no fields)');
    expect(email.html).toContain('(no fields)');
  });

  it('escapes names, values, file names and form data in the HTML', () => {
    const email = renderNotification(
      submission({
        formName: evil,
        domain: evil,
        ip: evil,
        submissionId: evil,
        fields: { [evil]: evil, list: [evil, evil], multi: `${evil}\n${evil}` },
        files: [{ filename: evil, size: 1 }],
      }),
    );
    expect(email.html).not.toMatch(/<script|<\/script/i);
    expect(email.html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;<br>&lt;script&gt;');
    expect(email.text).toContain(`${evil}: ${evil}`);
    expect(email.subject).toBe(`New submission: ${evil}`);
  });
});

describe('subjects', () => {
  it('renders a given subject as Liquid', () => {
    const email = renderNotification(submission(), {
      subject: 'New message from {{ form.name }} ({{ form.missing || "no phone" }})',
    });
    expect(email.subject).toBe('New message from Ada (no phone)');
  });

  it('keeps the subject on one line whatever a field or form name holds', () => {
    const hostile = submission({ formName: 'Contact\r\nBcc: x@example.org', fields: { x: 'Hi\r\nBcc: victim@example.org\n\nbody' } });
    const given = renderNotification(hostile, { subject: 'From {{ form.x }}' });
    expect(given.subject).toBe('From Hi Bcc: victim@example.org body');
    const byDefault = renderNotification(hostile);
    expect(byDefault.subject).toBe('New submission: Contact Bcc: x@example.org');
    const fromTemplate = renderAcknowledgment(hostile, { template: { subject: '{{ form.x }}', text: 't', html: null } });
    for (const subject of [given.subject, byDefault.subject, fromTemplate.subject]) expect(subject).not.toMatch(/[\r\n]/);
  });

  it('uses a subject that does not render as written, and an empty one not at all', () => {
    expect(renderNotification(submission(), { subject: 'Hi {{ form.name' }).subject).toBe('Hi {{ form.name');
    const loop = '{% for i in (1..1000000) %}x{% endfor %}';
    expect(renderNotification(submission(), { subject: loop }).subject).toBe(loop);
    expect(renderNotification(submission(), { subject: '{{ form.missing }}' }).subject).toBe('New submission: Contact');
  });
});

describe('default acknowledgment', () => {
  const phishing = submission({
    fields: { name: 'Your bank', email: 'victim@example.org', message: 'Your account is locked. Verify at https://evil.test/login' },
    files: [{ filename: 'invoice.pdf', size: 10 }],
  });

  it('thanks the submitter with only what the owner wrote: form name, domain, reference', () => {
    const email = renderAcknowledgment(phishing);
    expect(email.subject).toBe('We received your message');
    expect(email.text).toBe(
      [
        'Thank you for your message',
        '',
        'Your message to “Contact” on example.com has been received.',
        '',
        '-- ',
        'Received 2024-05-06T23:30:00.000Z · reference sub_123',
        '',
      ].join('\n'),
    );
    expect(email.html).toContain('sub_123');
  });

  it('quotes nothing the visitor sent: no field names, values or file names', () => {
    const email = renderAcknowledgment(phishing);
    for (const part of [email.subject, email.text, email.html!]) {
      expect(part).not.toMatch(/Your bank|locked|evil|victim|invoice|message:|name:/);
    }
    expect(email.text).not.toContain('203.0.113.9');
  });

  it('is written in the submission’s language', () => {
    expect(renderAcknowledgment(phishing, { language: 'de' })).toMatchObject({
      subject: 'Wir haben Ihre Nachricht erhalten',
      text: expect.stringContaining('Vielen Dank für Ihre Nachricht'),
    });
    expect(renderAcknowledgment(phishing, { language: 'fr' }).text).toContain('Merci pour votre message');
    expect(renderAcknowledgment(phishing, { language: 'es' }).html).toContain('Gracias por su mensaje');
  });

  it('gives a template the fields it asks for by name, links defanged, escaped in html', () => {
    const email = renderAcknowledgment(phishing, {
      subject: 'Re: {{ form.message }}',
      template: { subject: 's', text: 'You wrote: {{ form.message }}', html: '<p>{{ form.message }} {{ form.name }}</p>' },
    });
    expect(email.text).toBe('You wrote: Your account is locked. Verify at hxxps[:]//evil[.]test/login');
    expect(email.html).toBe('<p>Your account is locked. Verify at hxxps[:]//evil[.]test/login Your bank</p>');
    expect(email.subject).toBe('Re: Your account is locked. Verify at hxxps[:]//evil[.]test/login');
  });

  it('takes a given subject and escapes what a template shows', () => {
    const email = renderAcknowledgment(submission({ fields: { [evil]: evil } }), {
      subject: 'Thanks, {{ form.name || "friend" }}',
      template: { subject: 's', text: null, html: '{% for f in form %}{{ f[0] }}={{ f[1] }}{% endfor %}' },
    });
    expect(email.subject).toBe('Thanks, friend');
    expect(email.html).not.toMatch(/<script/i);
  });

  it('never uses the visitor’s _subject', () => {
    expect(renderAcknowledgment(phishing, { literalSubject: 'Account locked' }).subject).toBe('We received your message');
  });
});

describe('languages of the default notification', () => {
  it('speaks English unless told otherwise, and each shipped language when told', () => {
    expect(renderNotification(submission()).subject).toBe('New submission: Contact');
    expect(renderNotification(submission(), { language: 'de' }).subject).toBe('Neue Einsendung: Contact');
    expect(renderNotification(submission(), { language: 'fr' }).text).toContain('Un formulaire de example.com a été envoyé.');
    expect(renderNotification(submission({ fields: {} }), { language: 'es' }).text).toContain('(sin campos)');
  });
});

describe('plain format', () => {
  it('makes a text-only notification, with a template too', () => {
    const email = renderNotification(submission(), { format: 'plain' });
    expect(email.html).toBeUndefined();
    expect(email.text).toContain('name: Ada');
    const templated = renderNotification(submission(), {
      format: 'plain',
      template: { subject: 's', text: null, html: '<p>Hi {{ form.name }}</p>' },
    });
    expect(templated).toEqual({ subject: 's', text: 'Hi Ada' });
  });
});

describe('bidi controls', () => {
  it('shows them escaped in names, values, file names and _subject of the notification', () => {
    const email = renderNotification(
      submission({
        fields: { 'na\u202eme': 'invoice\u202Efdp.exe', msg: 'a\u2066b\u2069c\u200f\u061c' },
        files: [{ filename: 'cv\u202Efdp.exe', size: 1 }],
      }),
      { literalSubject: 'Hi \u202Eereh' },
    );
    expect(email.text).toContain('na<U+202E>me: invoice<U+202E>fdp.exe');
    expect(email.text).toContain('msg: a<U+2066>b<U+2069>c<U+200F><U+061C>');
    expect(email.text).toContain('cv<U+202E>fdp.exe (1 B)');
    expect(email.html).toContain('invoice&lt;U+202E&gt;fdp.exe');
    expect(email.subject).toBe('Hi <U+202E>ereh');
    for (const part of [email.subject, email.text, email.html!]) expect(part).not.toMatch(/[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]/);
  });
});

describe('size cap', () => {
  const mb = (text: string) => Buffer.byteLength(text) / 1024 / 1024;

  it('cuts the longest values so that the notification stays within 5 MB, escaping counted, and says where the rest is', () => {
    const fields = Object.fromEntries(Array.from({ length: 150 }, (_, i) => [`f${i}`, '"'.repeat(100_000)]));
    const email = renderNotification(submission({ fields, formId: 'form_1' }));
    expect(mb(email.text) + mb(email.html!)).toBeLessThanOrEqual(5);
    expect(mb(email.text) + mb(email.html!)).toBeGreaterThan(4);
    expect(email.text).toMatch(
      /f0: "+… \(cut: \d+ more characters; the whole value is in submission sub_123: GET \/api\/forms\/form_1\/submissions\)/,
    );
  });

  it('leaves short values whole when only one value is long', () => {
    const email = renderNotification(
      submission({ fields: { name: 'Ada', ...Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`x${i}`, '<'.repeat(100_000)])) } }),
    );
    expect(email.text).toContain('name: Ada\n');
    expect(mb(email.text) + mb(email.html!)).toBeLessThanOrEqual(5);
  });

  it('cuts long field names and counts them in the cap', () => {
    // 200 names of 200 right-to-left overrides: 1,600 characters each once escaped, 7 bytes apiece in text and html.
    const fields = Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`${i}`.padEnd(200, '\u202E'), '"'.repeat(100_000)]));
    const email = renderNotification(submission({ fields }));
    expect(mb(email.text) + mb(email.html!)).toBeLessThanOrEqual(5);
    const first = email.text.split('\n').find((line) => line.startsWith('0<U+202E>'))!;
    expect(first.slice(0, first.indexOf(': '))).toBe(`0${'<U+202E>'.repeat(25)}`.slice(0, 200) + '…');
  });

  it('keeps values whole when the email is small enough', () => {
    const long = 'a'.repeat(100_000);
    expect(renderNotification(submission({ fields: { long } })).text).toContain(`long: ${long}\n`);
  });

  it('counts the text part alone in plain format', () => {
    const fields = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`f${i}`, '"'.repeat(100_000)]));
    expect(renderNotification(submission({ fields }), { format: 'plain' }).text).not.toContain('cut:');
    expect(renderNotification(submission({ fields })).text).toContain('cut:');
  });

  it('cuts the values a template gets, and falls back to the default body when the template renders more', () => {
    const fields = Object.fromEntries(Array.from({ length: 150 }, (_, i) => [`f${i}`, 'a'.repeat(100_000)]));
    const errors: Error[] = [];
    const onTemplateError = (e: Error) => errors.push(e);
    const all = { subject: 's', text: '{% for f in form %}{{ f[1] }}{% endfor %}', html: null };
    const email = renderAcknowledgment(submission({ fields }), { template: all, onTemplateError });
    expect(errors).toEqual([]);
    expect(mb(email.text) + mb(email.html!)).toBeLessThanOrEqual(5);
    expect(email.text).toContain('a… (cut: ');

    const twice = { subject: 's', text: '{% for f in form %}{{ f[1] }}{{ f[1] }}{% endfor %}', html: null };
    const fallback = renderNotification(submission({ fields }), { template: twice, onTemplateError });
    expect(errors.map((e) => e.message)).toEqual([expect.stringMatching(/larger than 5 MB|render limit exceeded/)]);
    expect(fallback.text).toContain('New submission: Contact');
    expect(mb(fallback.text) + mb(fallback.html!)).toBeLessThanOrEqual(5);
  });
});

describe('with a stored template', () => {
  const template = {
    subject: 'Message from {{ form.name }} on {{ domain }}',
    html: '<h1>{{ form.name }}</h1><p>{{ form.message | nl2br }}</p><p>{{ timestamp | date: "%Y-%m-%d" }} {{ ip }} {{ submission.id }}</p>{% if form.topics %}<p>{{ form.topics }}</p>{% endif %}',
    text: 'From {{ form.name }}:\n{{ form.message }}',
  };

  it('renders its parts with the submission context', () => {
    const email = renderNotification(submission(), { template });
    expect(email).toEqual({
      subject: 'Message from Ada on example.com',
      html: '<h1>Ada</h1><p>Hello,<br>second line</p><p>2024-05-06 203.0.113.9 sub_123</p><p>billing, api</p>',
      text: 'From Ada:\nHello,\nsecond line',
    });
  });

  it('gives its default variables to the template, the submission’s own names winning', () => {
    const email = renderNotification(submission(), {
      template: {
        subject: '{{ company }}: {{ domain }}',
        text: '{{ company }} {{ form.name }}',
        html: null,
        variables: { company: 'Acme & Co', domain: 'not-this' },
      },
    });
    expect(email.subject).toBe('Acme & Co: example.com');
    expect(email.text).toBe('Acme & Co Ada');
  });

  it('lets the given subject win over the template’s', () => {
    expect(renderNotification(submission(), { template, subject: 'Custom {{ form.email }}' }).subject).toBe('Custom ada@example.org');
  });

  it('derives a missing text part from the html, and a missing html part from the text', () => {
    const htmlOnly = renderNotification(submission({ fields: { name: 'A & B' } }), {
      template: { subject: 's', html: '<h1>Hi {{ form.name }}</h1><p>one<br>two</p>', text: null },
    });
    expect(htmlOnly.text).toBe('Hi A & B\n\none\ntwo');
    const textOnly = renderAcknowledgment(submission({ fields: { name: '<A>' } }), {
      template: { subject: 's', html: null, text: 'Hi {{ form.name }}\nbye' },
    });
    expect(textOnly.html).toBe('Hi &lt;A&gt;<br>bye');
    expect(textOnly.text).toBe('Hi <A>\nbye');
  });

  it('escapes submitted values, names included, in the template’s html', () => {
    const email = renderNotification(submission({ fields: { [evil]: evil, x: evil } }), {
      template: {
        subject: '{{ form.x }}',
        text: null,
        html: '{% for f in form %}<b>{{ f[0] }}</b>{{ f[1] | nl2br }}{% endfor %}{{ form.x | upcase }}',
      },
    });
    expect(email.html).not.toMatch(/<script/i);
    expect(email.html).toContain('<b>&lt;script&gt;alert(1)&lt;/script&gt;</b>');
    expect(email.subject).toBe(evil);
  });

  it('gives a template 50 ms, then uses the default body', () => {
    const errors: Error[] = [];
    const email = renderNotification(submission(), {
      template: { subject: 'Slow', text: '{% for i in (1..3000) %}{% for j in (1..3000) %}{{ j }}{% endfor %}{% endfor %}', html: null },
      onTemplateError: (err) => errors.push(err),
    });
    expect(email.text).toContain('name: Ada');
    expect(errors.map((e) => e.message)).toEqual([expect.stringMatching(/render limit exceeded/)]);
  });

  it('shares one budget among all the renders of a post: a slow notification leaves the acknowledgment the default', () => {
    const slow = {
      subject: 'Slow {{ form.name }}',
      text: '{% for i in (1..3000) %}{% for j in (1..3000) %}{{ j }}{% endfor %}{% endfor %}',
      html: null,
    };
    const errors: string[] = [];
    const onTemplateError = (err: Error) => errors.push(err.message);
    const budget = new RenderBudget();
    const limits: number[] = [];
    const spend = budget.spend.bind(budget);
    jest.spyOn(budget, 'spend').mockImplementation((render) => spend((limitMs) => (limits.push(limitMs), render(limitMs))));
    const notification = renderNotification(submission(), { template: slow, budget, onTemplateError });
    const acknowledgment = renderAcknowledgment(submission(), { template: slow, budget, onTemplateError });
    // 50 ms in all, not 50 ms for each render: the notification's body took what its subject left, the acknowledgment 1 ms each.
    expect(limits).toEqual([50, expect.any(Number), 1, 1]);
    expect(limits[1]).toBeLessThan(50);
    expect(limits[1]).toBeGreaterThan(1);
    expect(notification.text).toContain('name: Ada');
    expect(acknowledgment.text).toContain('Thank you for your message');
    expect(errors).toEqual([expect.stringMatching(/render limit exceeded/), expect.stringMatching(/render limit exceeded/)]);
  });

  it('falls back to the default body when the template cannot be rendered, and says why', () => {
    const errors: Error[] = [];
    const email = renderNotification(submission(), {
      template: { subject: 'Runaway', text: '{% for i in (1..100000000) %}x{% endfor %}', html: null },
      onTemplateError: (err) => errors.push(err),
    });
    expect(email.subject).toBe('Runaway');
    expect(email.text).toContain('name: Ada');
    expect(errors.map((e) => e.message)).toEqual([expect.stringMatching(/memory alloc limit exceeded/)]);
  });
});
