import { AppException } from '../common/errors/app.exception';
import {
  checkLiquidTemplate,
  LiquidParts,
  MAX_RENDERED_CHARS,
  MAX_SUBJECT_CHARS,
  renderLiquid,
  rewriteDialect,
  toSubjectLine,
} from './liquid-dialect';

const context = {
  form: { name: 'Ada', empty: '', message: 'line one\n<b>line</b> two', email: 'ada@example.org' },
  domain: 'example.com',
  timestamp: '2024-05-06T23:30:00.000Z',
  ip: '203.0.113.9',
  submission: { id: 'sub_1' },
};

function renderError(parts: LiquidParts, ctx: Record<string, unknown> = context): { field: string; message: string }[] {
  try {
    renderLiquid(parts, ctx);
  } catch (err) {
    expect(err).toBeInstanceOf(AppException);
    expect((err as AppException).status).toBe(400);
    return (err as AppException).details!.fields as { field: string; message: string }[];
  }
  throw new Error('rendered without error');
}

const text = (source: string, ctx: Record<string, unknown> = context) => renderLiquid({ text: source }, ctx).text;
const html = (source: string, ctx: Record<string, unknown> = context) => renderLiquid({ html: source }, ctx).html;

describe('the || default operator', () => {
  it('falls back along a chain to the first non-empty value or literal', () => {
    expect(text('{{ form.missing || form.empty || form.name }}')).toBe('Ada');
    expect(text('Hi {{ form.missing || "friend" }}')).toBe('Hi friend');
    expect(text('{{ form.missing||form.empty||"x" }}')).toBe('x');
    expect(text('{{ form.name || "friend" }}')).toBe('Ada');
  });

  it('applies filters after the chain to its result', () => {
    expect(text('{{ form.missing || "friend" | upcase }}')).toBe('FRIEND');
    expect(text('{{ form.name || "friend" | upcase }}')).toBe('ADA');
    expect(text('{{ form.missing | upcase || "none" }}')).toBe('none');
  });

  it('leaves string literals and raw blocks as written', () => {
    expect(text('{{ form.missing || "a || b" }}|{{ \'c||d\' }}')).toBe('a || b|c||d');
    expect(text('{% raw %}{{ a || b }}{% endraw %}')).toBe('{{ a || b }}');
    expect(rewriteDialect('{{ a || "x\\"||y" }}')).toBe('{{ a | default: "x\\"||y" }}');
  });

  it('means or in conditions, and default in echo and assign', () => {
    expect(text('{% if form.missing || form.name %}yes{% else %}no{% endif %}')).toBe('yes');
    expect(text('{% if form.missing || form.empty %}yes{% else %}no{% endif %}')).toBe('no');
    expect(text('{% unless form.missing || form.name %}no{% endunless %}.')).toBe('.');
    expect(text('{% assign who = form.missing || "you" %}{{ who }} {% echo form.missing || "there" %}')).toBe('you there');
  });

  it('keeps line numbers, so errors point at the written line', () => {
    const source = 'a\n{{ x || y }}\n{% if a || b %}\nno end';
    expect(rewriteDialect(source).split('\n')).toHaveLength(4);
    expect(checkLiquidTemplate({ text: source })).toEqual([
      { field: 'text', message: expect.stringMatching(/^line 3: tag .* not closed/) },
    ]);
  });
});

describe('filters', () => {
  it('nl2br escapes, then breaks lines, and is not escaped again in html', () => {
    expect(html('<p>{{ form.message | nl2br }}</p>')).toBe('<p>line one<br>&lt;b&gt;line&lt;/b&gt; two</p>');
    expect(html('{{ v | nl2br }}', { v: 'a\r\nb\rc & d' })).toBe('a<br>b<br>c &amp; d');
  });

  it('nl2br keeps plain text as it is in text and subject', () => {
    expect(text('{{ form.message | nl2br }}')).toBe('line one\n<b>line</b> two');
    expect(renderLiquid({ subject: '{{ form.message | nl2br }}' }, context).subject).toBe('line one <b>line</b> two');
  });

  it('date formats an ISO timestamp with strftime, in UTC', () => {
    expect(text('{{ timestamp | date: "%Y-%m-%d" }}')).toBe('2024-05-06');
    expect(text('{{ timestamp | date: "%Y-%m-%d %H:%M" }}')).toBe('2024-05-06 23:30');
    expect(text('{{ t | date: "%Y-%m-%d %H:%M" }}', { t: '2024-05-06T22:30:00-05:00' })).toBe('2024-05-07 03:30');
    expect(text('{{ timestamp | date: "%B %-d, %Y" }}')).toBe('May 6, 2024');
  });

  it('refuses unknown filters at parse time', () => {
    expect(checkLiquidTemplate({ html: '<p>\n{{ form.name | shout }}</p>' })).toEqual([
      { field: 'html', message: 'line 2: undefined filter: shout' },
    ]);
  });
});

describe('conditions and variables', () => {
  it('renders if / elsif / else / endif', () => {
    const source = '{% if form.name == "Ada" %}A{% elsif form.name %}B{% else %}C{% endif %}';
    expect(text(source)).toBe('A');
    expect(text(source, { form: { name: 'Bo' } })).toBe('B');
    expect(text(source, { form: {} })).toBe('C');
  });

  it('renders the spec variables, missing ones as nothing, and no prototype properties', () => {
    expect(text('{{ domain }} {{ ip }} {{ timestamp }} {{ submission.id }} [{{ nope.deeper }}]')).toBe(
      'example.com 203.0.113.9 2024-05-06T23:30:00.000Z sub_1 []',
    );
    expect(text('[{{ form.constructor }}][{{ form.__proto__ }}][{{ form.hasOwnProperty }}]')).toBe('[][][]');
  });
});

describe('HTML escaping', () => {
  const evil = '<script>alert(1)</script>';
  const evilContext = {
    form: { [evil]: evil, x: evil, list: `${evil}\n${evil}` },
    domain: evil,
    timestamp: evil,
    ip: evil,
    submission: { id: evil },
  };

  it('escapes submitted values, and names, in every position of the html part', () => {
    const positions = [
      '{{ form.x }}',
      '{{ form.missing || form.x }}',
      '{{ form.x | upcase }}',
      '{{ form.x | downcase | strip }}',
      '{{ form.x | truncate: 12 }}',
      '{{ form.x | append: form.x }}',
      '{{ "a" | prepend: form.x }}',
      '{{ form.x | replace: "x", "y" }}',
      '{{ form.x | split: "," | join: "" }}',
      '{{ form.x | escape }}',
      '{{ form.x | escape_once }}',
      '{{ form.x | nl2br }}',
      '{{ form.list | nl2br }}',
      '{{ form.x | nl2br | upcase }}',
      '{{ form.x | date: "%Y" }}',
      '{{ form.x | default: "d" }}',
      '{{ form.x | url_decode }}',
      '{{ form.x | strip_newlines }}',
      '{{ form.x | newline_to_br }}',
      '{% echo form.x %}',
      '{% liquid echo form.x %}',
      '{% cycle form.x, "b" %}',
      '{% assign y = form.x %}{{ y }}',
      '{% capture c %}{{ form.x }}{% endcapture %}{{ c }}',
      '{% for pair in form %}{{ pair[0] }}={{ pair[1] }};{% endfor %}',
      '{% for v in form.x %}{{ v }}{% endfor %}',
      '{% tablerow v in form.x %}{{ v }}{% endtablerow %}',
      '{{ domain }}{{ ip }}{{ timestamp }}{{ submission.id }}',
      '{% case form.x %}{% when form.x %}{{ form.x }}{% endcase %}',
    ];
    for (const source of positions) {
      const out = html(source, evilContext);
      expect({ source, out }).toEqual({ source, out: expect.not.stringMatching(/<script|<\/script/i) });
      expect({ source, out }).toEqual({ source, out: expect.stringMatching(/&lt;|&amp;lt;|%3C/i) });
    }
  });

  it('escapes once where the template escapes itself', () => {
    expect(html('{{ form.x | escape }}', { form: { x: '<a>' } })).toBe('&lt;a&gt;');
    expect(html('{{ form.x }}', { form: { x: '"Tom" & \'Jerry\'' } })).toBe('&#34;Tom&#34; &amp; &#39;Jerry&#39;');
  });

  it('offers no raw filter in html, saying why; text and subject are not escaped', () => {
    expect(checkLiquidTemplate({ html: '{{ form.x | raw }}' })).toEqual([
      { field: 'html', message: 'line 1: undefined filter: raw (values are always HTML-escaped in html)' },
    ]);
    const out = renderLiquid({ subject: 'S {{ form.x }}', text: 'T {{ form.x }}' }, evilContext);
    expect(out).toEqual({ subject: `S ${evil}`, text: `T ${evil}` });
  });
});

describe('the subject', () => {
  it('is one line without CR, LF or other control characters, whatever a field holds', () => {
    const hostile = { form: { x: 'Hello\r\nBcc: victim@example.org\r\n\r\nbody\t\u0000\u2028end' } };
    const { subject } = renderLiquid({ subject: '  New: {{ form.x }}\n' }, hostile);
    expect(subject).toBe('New: Hello Bcc: victim@example.org body end');
    // eslint-disable-next-line no-control-regex -- NUL is one of the characters that must be gone
    expect(subject).not.toMatch(/[\r\n\t\u0000\u2028]/);
  });

  it('is at most 998 characters and never ends in half a surrogate pair', () => {
    const { subject } = renderLiquid({ subject: '{{ form.x }}' }, { form: { x: 'a'.repeat(5000) } });
    expect(subject).toHaveLength(MAX_SUBJECT_CHARS);
    const emoji = toSubjectLine('a' + '😀'.repeat(600));
    expect(emoji.length).toBeLessThanOrEqual(MAX_SUBJECT_CHARS);
    expect(emoji).not.toMatch(/[\ud800-\udbff]$/);
  });

  it('is empty when the template has none', () => {
    expect(renderLiquid({ text: 'x' }, {})).toEqual({ subject: '', text: 'x' });
  });
});

describe('template checks', () => {
  it('names the part and the line of each parse error', () => {
    expect(checkLiquidTemplate({ subject: 'Hi {{ form.name', text: 'ok\n\n{% if form.x %}open', html: '<p>\n{% endif %}' })).toEqual([
      { field: 'subject', message: expect.stringMatching(/^line 1: output .* not closed/) },
      { field: 'text', message: expect.stringMatching(/^line 3: tag .* not closed/) },
      { field: 'html', message: expect.stringMatching(/^line 2: .*endif/) },
    ]);
    expect(checkLiquidTemplate({ subject: 'Hi {{ form.name }}', text: 'fine', html: null })).toEqual([]);
  });

  it('refuses include, render and layout: templates read no files', () => {
    for (const tag of ['include', 'render', 'layout']) {
      expect(checkLiquidTemplate({ html: `x\n{% ${tag} "/etc/passwd" %}` })).toEqual([
        { field: 'html', message: `line 2: ${tag} is not supported: a template is self-contained` },
      ]);
    }
  });

  it('refuses a part larger than 512 KB', () => {
    expect(checkLiquidTemplate({ html: 'x'.repeat(512 * 1024 + 1) })).toEqual([{ field: 'html', message: 'longer than 512 KB' }]);
  });

  it('reports parse errors from renderLiquid as a 400 naming the part', () => {
    expect(renderError({ subject: 's', text: '{% if %}' })).toEqual([{ field: 'text', message: expect.stringMatching(/^line 1: /) }]);
  });
});

describe('limits', () => {
  it('stops a runaway loop quickly, as a 400 naming the part and line', () => {
    const started = Date.now();
    expect(renderError({ text: 'a\n{% for i in (1..100000000) %}x{% endfor %}' })).toEqual([
      { field: 'text', message: 'template could not be rendered: line 2: memory alloc limit exceeded' },
    ]);
    expect(renderError({ html: '{% for i in (1..5000) %}{% for j in (1..5000) %}{{ i }}{% endfor %}{% endfor %}' })).toEqual([
      { field: 'html', message: expect.stringMatching(/limit exceeded/) },
    ]);
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it('gives a subject a small budget', () => {
    expect(renderError({ subject: '{% for i in (1..1000000) %}x{% endfor %}' })).toEqual([
      { field: 'subject', message: expect.stringMatching(/limit exceeded/) },
    ]);
  });

  it('stops output larger than the limit', () => {
    const big = 'x'.repeat(10_000);
    const times = Math.ceil(MAX_RENDERED_CHARS / big.length) + 1;
    expect(renderError({ text: `{% for i in (1..${times}) %}{{ big }}{% endfor %}` }, { big })).toEqual([
      { field: 'text', message: 'template could not be rendered: output is larger than 10 MB' },
    ]);
  });

  it('renders all parts of a call within a given time budget', () => {
    const nested = '{% for i in (1..3000) %}{% for j in (1..3000) %}{{ j }}{% endfor %}{% endfor %}';
    let error: unknown;
    try {
      renderLiquid({ text: nested, html: nested }, context, { renderLimitMs: 50 });
    } catch (err) {
      error = err;
    }
    expect((error as AppException).details!.fields).toEqual([{ field: 'text', message: expect.stringMatching(/render limit exceeded/) }]);
    expect(renderLiquid({ subject: 'Hi {{ form.name }}', text: 'x' }, context, { renderLimitMs: 50 })).toEqual({
      subject: 'Hi Ada',
      text: 'x',
    });
  });

  it('gives every render a fresh budget', () => {
    // Each render allocates 6 M of the 10 M budget.
    const source = '{% assign s = big | append: big %}{{ s | size }}';
    const big = 'x'.repeat(3_000_000);
    for (let i = 0; i < 3; i++) expect(text(source, { big })).toBe('6000000');
  });
});
