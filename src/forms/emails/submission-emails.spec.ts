import { renderAcknowledgment, renderNotification, SubmissionEmailContext, submissionTemplateContext } from './submission-emails';

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
    expect(html.startsWith('<!DOCTYPE html>')).toBe(true);
  });

  it('never shows control fields', () => {
    const email = renderNotification(submission({ fields: { name: 'Ada', _subject: 'S', _replyto: 'r@example.org' } }));
    expect(email.text).not.toMatch(/_subject|_replyto|r@example\.org/);
    expect(email.html).not.toMatch(/_subject|_replyto|r@example\.org/);
    expect(submissionTemplateContext(submission({ fields: { a: '1', _redirect: 'x' } })).form).toEqual({ a: '1' });
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
  it('thanks the submitter with a copy of the fields', () => {
    const email = renderAcknowledgment(submission());
    expect(email.subject).toBe('We received your message');
    expect(email.text).toContain('Thank you for your message');
    expect(email.text).toContain('name: Ada\nemail: ada@example.org\nmessage:\n  Hello,\n  second line\ntopics: billing, api');
    expect(email.text).not.toContain('203.0.113.9');
    expect(email.html).toContain('>Hello,<br>second line</td>');
  });

  it('takes a given subject and escapes what was sent', () => {
    const email = renderAcknowledgment(submission({ fields: { [evil]: evil } }), { subject: 'Thanks, {{ form.name || "friend" }}' });
    expect(email.subject).toBe('Thanks, friend');
    expect(email.html).not.toMatch(/<script/i);
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
