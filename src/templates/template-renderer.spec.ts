import { AppException } from '../common/errors/app.exception';
import { MAX_LOOP_ITERATIONS, MAX_RENDERED_BYTES, MAX_TEMPLATE_PART_BYTES, TemplateContent, TemplateRenderer } from './template-renderer';

function compileError(renderer: TemplateRenderer, content: TemplateContent): { field: string; message: string }[] {
  try {
    renderer.compile(content);
  } catch (err) {
    expect(err).toBeInstanceOf(AppException);
    expect((err as AppException).status).toBe(400);
    return (err as AppException).details!.fields as { field: string; message: string }[];
  }
  throw new Error('compiled without error');
}

describe('TemplateRenderer', () => {
  const renderer = new TemplateRenderer();
  const render = (content: TemplateContent, variables: Record<string, unknown> = {}) =>
    renderer.render(renderer.compile(content), variables);

  it('fills values, conditional sections, inverted sections and loops as Mustache does', () => {
    const out = render(
      {
        subject: 'Order for {{name}}',
        text: 'Hi {{name}}.{{#premium}} Premium!{{/premium}}{{^premium}} Basic.{{/premium}} {{#items}}[{{title}} x{{qty}} for {{name}}]{{/items}}',
      },
      {
        name: 'Ada',
        premium: false,
        items: [
          { title: 'Gear', qty: 2 },
          { title: 'Cam', qty: 1 },
        ],
      },
    );
    expect(out).toEqual({ subject: 'Order for Ada', text: 'Hi Ada. Basic. [Gear x2 for Ada][Cam x1 for Ada]' });
  });

  it('renders a truthy section once and an empty list or missing value as nothing', () => {
    const content = { subject: 's', text: '{{#flag}}on{{/flag}}|{{#items}}x{{/items}}|{{missing}}|{{a.b.c}}' };
    expect(render(content, { flag: true, items: [] }).text).toBe('on|||');
    expect(render(content, {}).text).toBe('|||');
  });

  it('loops over plain values with {{.}} and offers @index in each', () => {
    const out = render(
      { subject: 's', text: '{{#tags}}<{{.}}>{{/tags}} {{#each tags}}{{@index}}={{this}};{{/each}}' },
      { tags: ['a', 'b'] },
    );
    expect(out.text).toBe('<a><b> 0=a;1=b;');
  });

  it('escapes values in the html part only', () => {
    const value = '<b>"Tom" & \'Jerry\'</b>';
    const out = render({ subject: 'About {{v}}', html: '<p>{{v}}</p><div>{{{v}}}</div>', text: 'Text {{v}}' }, { v: value });
    expect(out.html).toBe('<p>&lt;b&gt;&quot;Tom&quot; &amp; &#x27;Jerry&#x27;&lt;/b&gt;</p><div><b>"Tom" & \'Jerry\'</b></div>');
    expect(out.text).toBe(`Text ${value}`);
    expect(out.subject).toBe(`About ${value}`);
  });

  it('always defines subject (the rendered one) and unsubscribeUrl for the body', () => {
    const content = { subject: 'Hello {{name}}', html: '<h1>{{subject}}</h1><a href="{{unsubscribeUrl}}">u</a>' };
    expect(render(content, { name: 'Ada' }).html).toBe('<h1>Hello Ada</h1><a href="">u</a>');
    const passed = render(content, { name: 'Ada', subject: 'ignored', unsubscribeUrl: 'https://x.test/u/abc' });
    expect(passed.html).toBe('<h1>Hello Ada</h1><a href="https://x.test/u/abc">u</a>');
  });

  it('never lets a rendered subject span lines', () => {
    expect(render({ subject: 'Hi {{name}}', text: 't' }, { name: 'x\r\nBcc: victim@example.org' }).subject).toBe(
      'Hi x Bcc: victim@example.org',
    );
  });

  it('leaves prototype properties out of reach', () => {
    const out = render(
      { subject: 's', text: '[{{constructor}}][{{__proto__}}][{{toString}}][{{#with this}}{{constructor.name}}{{/with}}]' },
      {},
    );
    expect(out.text).toBe('[][][][]');
  });

  it('names the part and the line of a syntax error', () => {
    const fields = compileError(renderer, { subject: 'ok', html: '<p>\n{{#if premium}}\nyes {{/unless}}' });
    expect(fields).toEqual([{ field: 'html', message: expect.stringMatching(/^line 2: if doesn't match unless/) }]);

    const parse = compileError(renderer, { subject: 'Hi {{name', text: 'fine' });
    expect(parse).toEqual([{ field: 'subject', message: expect.stringMatching(/^line 1: syntax error/) }]);
  });

  it('reports every bad part at once', () => {
    const fields = compileError(renderer, { subject: '{{', html: '{{#a}}', text: '{{/b}}' });
    expect(fields.map((f) => f.field)).toEqual(['subject', 'html', 'text']);
  });

  it('refuses unknown helpers, partials, decorators and builtins with the wrong arguments at compile time', () => {
    expect(compileError(renderer, { subject: 's', text: 'a\n{{uppercase name}}' })[0].message).toBe('line 2: unknown helper uppercase');
    expect(compileError(renderer, { subject: 's', text: '{{log name}}' })[0].message).toBe('line 1: unknown helper log');
    expect(compileError(renderer, { subject: 's', text: '{{> footer}}' })[0].message).toMatch(/partials .* not supported/);
    expect(compileError(renderer, { subject: 's', text: '{{#if}}x{{/if}}' })[0].message).toBe('line 1: if takes 1 argument, got 0');
    expect(compileError(renderer, { subject: 's', text: 'x\n\n{{#each}}x{{/each}}' })[0].message).toBe(
      'line 3: each takes 1 argument, got 0',
    );
    expect(compileError(renderer, { subject: 's', text: '{{#each a}}{{> p}}{{/each}}' })[0].message).toMatch(/partials/);
  });

  it('refuses a part larger than the limit', () => {
    const big = 'x'.repeat(MAX_TEMPLATE_PART_BYTES + 1);
    expect(compileError(renderer, { subject: 's', html: big })).toEqual([{ field: 'html', message: 'longer than 512 KB' }]);
  });

  it('renders inline content and reuses its compilation', () => {
    const content = { subject: 'Hi {{name}}', html: '<b>{{name}}</b>' };
    expect(renderer.renderContent(content, { name: '<A>' })).toEqual({ subject: 'Hi <A>', html: '<b>&lt;A&gt;</b>' });
    expect(renderer.renderContent(content, { name: 'B' })).toEqual({ subject: 'Hi B', html: '<b>B</b>' });
  });

  it('turns an inline syntax error into a 400 naming the part', () => {
    expect(() => renderer.renderContent({ subject: 'x', text: '{{#a}}' }, {})).toThrow(AppException);
  });
});

describe('TemplateRenderer limits', () => {
  const renderer = new TemplateRenderer();

  it('stops nested loops that would run too long, as a 400 naming the part', () => {
    const compiled = renderer.compile({ subject: 's', text: '{{#a}}{{#a}}{{#a}}{{#a}}x{{/a}}{{/a}}{{/a}}{{/a}}' });
    const a = Array.from({ length: 100 }, (_, i) => i);
    let error: AppException | undefined;
    try {
      renderer.render(compiled, { a });
    } catch (err) {
      error = err as AppException;
    }
    expect(error).toBeInstanceOf(AppException);
    expect(error!.details!.fields).toEqual([
      { field: 'text', message: `template could not be rendered: loops run more than ${MAX_LOOP_ITERATIONS} times` },
    ]);
  });

  it('stops a render whose output grows too large', () => {
    const compiled = renderer.compile({ subject: 's', html: '{{#each rows}}{{big}}{{/each}}' });
    const rows = Array.from({ length: 30 }, () => ({}));
    expect(() => renderer.render(compiled, { rows, big: 'x'.repeat(MAX_RENDERED_BYTES / 20) })).toThrow(/output is larger than 20 MB/);
  });

  it('gives every render a fresh budget', () => {
    const compiled = renderer.compile({ subject: 's', text: '{{#a}}.{{/a}}' });
    const a = Array.from({ length: MAX_LOOP_ITERATIONS / 2 }, () => 1);
    for (let i = 0; i < 3; i++) expect(renderer.render(compiled, { a }).text).toHaveLength(a.length);
  });
});
