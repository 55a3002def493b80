import { unstorableText } from './storable-text';

describe('unstorableText', () => {
  it('names each string PostgreSQL refuses by its path', () => {
    const body = {
      subject: 'fine',
      text: 'a\u0000b',
      attachments: [{ filename: 'x\ud800.pdf', content: 'ok' }],
      restrictions: { domain_restrictions: ['a.com', 'b\udc00.com'] },
    };
    expect(unstorableText(body, '')).toEqual([
      { field: 'text', message: 'must not contain NUL (U+0000)' },
      { field: 'attachments[0].filename', message: 'must not contain an unpaired UTF-16 surrogate' },
      { field: 'restrictions.domain_restrictions[1]', message: 'must not contain an unpaired UTF-16 surrogate' },
    ]);
  });

  it('accepts paired surrogates (emoji), other control characters and non-strings', () => {
    expect(unstorableText({ a: '😀 \u0001 \uffff', b: [1, true, null, { c: '\ud83d\ude00' }] }, '')).toEqual([]);
  });

  it('checks property names, escaping them in the path', () => {
    expect(unstorableText({ variables: { 'a\u0000': 1, ok: 'x' } }, '')).toEqual([
      { field: 'variables.a\\u0000', message: 'name must not contain NUL (U+0000)' },
    ]);
  });

  it('names a path parameter or query value by its own name', () => {
    expect(unstorableText('abc\u0000def', 'email')).toEqual([{ field: 'email', message: 'must not contain NUL (U+0000)' }]);
    expect(unstorableText({ cursor: ['x', 'y\udfff'] }, '')).toEqual([
      { field: 'cursor[1]', message: 'must not contain an unpaired UTF-16 surrogate' },
    ]);
  });

  it('stops at 20 problems', () => {
    expect(
      unstorableText(
        Array.from({ length: 1000 }, () => '\u0000'),
        'list',
      ),
    ).toHaveLength(20);
  });

  it('walks nesting of any depth without recursion', () => {
    let deep: unknown = '\u0000';
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(unstorableText(deep, 'x')).toEqual([{ field: `x${'[0]'.repeat(100_000)}`, message: 'must not contain NUL (U+0000)' }]);
  });
});
