import type { AppException } from '../../common/errors/app.exception';
import { fieldText, parseSubmittedFields } from './submitted-fields';

describe('parseSubmittedFields', () => {
  it('keeps text, turns JSON values into text and repeated names into lists', () => {
    const { fields } = parseSubmittedFields({ name: 'Ada', age: 36, subscribe: true, interests: ['math', 'looms'], note: null });
    expect(fields).toEqual({ name: 'Ada', age: '36', subscribe: 'true', interests: ['math', 'looms'] });
  });

  it('keeps fields named constructor and toString as the text posted, repeated ones as lists; __proto__ is a control field', () => {
    const body = JSON.parse('{"constructor":"x","toString":["y","y2"],"__proto__":"z","name":"Ann","a":{"__proto__":"n"}}') as object;
    const { fields, control } = parseSubmittedFields(body);
    expect(Object.entries(fields)).toEqual([
      ['constructor', 'x'],
      ['toString', ['y', 'y2']],
      ['name', 'Ann'],
      ['a.__proto__', 'n'],
    ]);
    expect(JSON.stringify(fields)).toBe('{"constructor":"x","toString":["y","y2"],"name":"Ann","a.__proto__":"n"}');
    // Like every `_…` name: kept apart as posted, an ordinary key (not the record's prototype).
    expect(Object.entries(control.all)).toEqual([['__proto__', 'z']]);
    expect(control.all['constructor']).toBeUndefined();
    expect(fieldText(fields, 'toString')).toBe('y');
    expect(fieldText(JSON.parse('{"name":"Ann"}') as Record<string, string>, 'constructor')).toBeUndefined();
  });

  it('flattens nested objects (url-encoded a[b]=c, JSON objects) into dotted names', () => {
    const { fields } = parseSubmittedFields({ address: { city: 'London', zip: 'N1' }, rows: [{ q: 1 }, { q: 2 }] });
    expect(fields).toEqual({ 'address.city': 'London', 'address.zip': 'N1', 'rows.0.q': '1', 'rows.1.q': '2' });
  });

  it('separates control fields and the widgets’ own fields from what is mailed', () => {
    const { fields, control } = parseSubmittedFields({
      message: 'hi',
      _redirect: 'https://example.com/thanks',
      _subject: 'Hello',
      _replyto: 'a@example.org',
      _service_honeypot: '',
      altcha: 'eyJ9',
      'cf-turnstile-response': 'token',
    });
    expect(fields).toEqual({ message: 'hi' });
    expect(control).toMatchObject({ redirect: 'https://example.com/thanks', subject: 'Hello', replyTo: 'a@example.org' });
    expect(control.all).toMatchObject({ _service_honeypot: '', altcha: 'eyJ9', 'cf-turnstile-response': 'token' });
  });

  it('takes an empty body and refuses a body that is not fields, too many fields or a huge value', () => {
    expect(parseSubmittedFields(undefined).fields).toEqual({});
    expect(() => parseSubmittedFields(['a'])).toThrow(/form fields/);
    expect(() => parseSubmittedFields('text')).toThrow(/form fields/);
    const many = Object.fromEntries(Array.from({ length: 201 }, (_, i) => [`f${i}`, 'x']));
    expect(() => parseSubmittedFields(many)).toThrow(/at most 200 fields/);
    expect(() => parseSubmittedFields({ message: 'x'.repeat(100_001) })).toThrow(/at most 100000 characters/);
  });
});

describe('parseSubmittedFields: fields of Formspree, Basin and Web3Forms forms', () => {
  it('keeps _gotcha and botcheck out of what is mailed', () => {
    const { fields, control } = parseSubmittedFields({ message: 'hi', _gotcha: '', botcheck: 'on' });
    expect(fields).toEqual({ message: 'hi' });
    expect(control.all).toEqual({ _gotcha: '', botcheck: 'on' });
  });

  it('reads _cc as addresses separated by commas, semicolons or spaces, repeated or not, each once', () => {
    expect(parseSubmittedFields({ m: 'x', _cc: 'a@example.org, b@example.org;c@example.org  d@example.org' }).control.cc).toEqual([
      'a@example.org',
      'b@example.org',
      'c@example.org',
      'd@example.org',
    ]);
    expect(parseSubmittedFields({ m: 'x', _cc: ['a@example.org', 'A@example.org;b@example.org'] }).control.cc).toEqual([
      'a@example.org',
      'b@example.org',
    ]);
    expect(parseSubmittedFields({ m: 'x', _cc: ' ; ' }).control.cc).toBeUndefined();
    const many = Array.from({ length: 80 }, (_, i) => `u${i}@example.org`).join(',');
    expect(parseSubmittedFields({ m: 'x', _cc: many }).control.cc).toHaveLength(50);
  });

  it('reads _format=plain and a _language tag, ignoring other values', () => {
    expect(parseSubmittedFields({ m: 'x', _format: 'plain', _language: 'de' }).control).toMatchObject({ format: 'plain', language: 'de' });
    expect(parseSubmittedFields({ m: 'x', _format: ' PLAIN ', _language: 'pt-BR' }).control).toMatchObject({
      format: 'plain',
      language: 'pt-BR',
    });
    const odd = parseSubmittedFields({ m: 'x', _format: 'html', _language: 'de"><script>' }).control;
    expect(odd.format).toBeUndefined();
    expect(odd.language).toBeUndefined();
    expect(parseSubmittedFields({ m: 'x', _language: 'x'.repeat(36) }).control.language).toBeUndefined();
  });

  it('keeps _replyto, _subject and _next working', () => {
    const { control } = parseSubmittedFields({ m: 'x', _replyto: 'a@example.org', _subject: 'Hi', _next: 'https://example.org/thanks' });
    expect(control).toMatchObject({ replyTo: 'a@example.org', subject: 'Hi', redirect: 'https://example.org/thanks' });
  });
});

describe('parseSubmittedFields: text PostgreSQL cannot store', () => {
  const refusal = (body: unknown, files?: { fieldname: string; originalname: string }[]) => {
    try {
      parseSubmittedFields(body, files);
    } catch (err) {
      return (err as AppException).details;
    }
    throw new Error('not refused');
  };

  it('refuses NUL in a value or a name, naming the field', () => {
    expect(refusal({ message: 'hello\u0000world' })).toEqual({ fields: [{ field: 'message', message: 'must not contain NUL (U+0000)' }] });
    expect(refusal({ 'mess\u0000age': 'hello' })).toEqual({
      fields: [{ field: 'mess\\u0000age', message: 'name must not contain NUL (U+0000)' }],
    });
    expect(refusal({ _subject: 'a\u0000' })).toEqual({ fields: [{ field: '_subject', message: 'must not contain NUL (U+0000)' }] });
    expect(refusal({ address: { city: ['x', 'y\u0000'] } })).toEqual({
      fields: [{ field: 'address.city[1]', message: 'must not contain NUL (U+0000)' }],
    });
  });

  it('refuses a lone surrogate, and keeps a pair (an emoji)', () => {
    expect(refusal({ msg: 'lone \ud800' })).toEqual({
      fields: [{ field: 'msg', message: 'must not contain an unpaired UTF-16 surrogate' }],
    });
    expect(parseSubmittedFields({ msg: 'pair \ud83d\ude00' }).fields).toEqual({ msg: 'pair \ud83d\ude00' });
  });

  it('refuses NUL in an upload’s field name or file name', () => {
    expect(refusal({ m: 'x' }, [{ fieldname: 'cv', originalname: 'cv\u0000.pdf' }])).toEqual({
      fields: [{ field: 'cv', message: 'file name must not contain NUL (U+0000)' }],
    });
    expect(refusal({ m: 'x' }, [{ fieldname: 'c\u0000v', originalname: 'cv.pdf' }])).toEqual({
      fields: [{ field: 'c\\u0000v', message: 'name must not contain NUL (U+0000)' }],
    });
  });
});

describe('fieldText', () => {
  it('gives the trimmed first value, undefined when absent or blank', () => {
    expect(fieldText({ email: ['  a@example.org ', 'b@example.org'] }, 'email')).toBe('a@example.org');
    expect(fieldText({ email: '   ' }, 'email')).toBeUndefined();
    expect(fieldText({}, 'email')).toBeUndefined();
  });
});
