import { fieldText, parseSubmittedFields } from './submitted-fields';

describe('parseSubmittedFields', () => {
  it('keeps text, turns JSON values into text and repeated names into lists', () => {
    const { fields } = parseSubmittedFields({ name: 'Ada', age: 36, subscribe: true, interests: ['math', 'looms'], note: null });
    expect(fields).toEqual({ name: 'Ada', age: '36', subscribe: 'true', interests: ['math', 'looms'] });
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

describe('fieldText', () => {
  it('gives the trimmed first value, undefined when absent or blank', () => {
    expect(fieldText({ email: ['  a@example.org ', 'b@example.org'] }, 'email')).toBe('a@example.org');
    expect(fieldText({ email: '   ' }, 'email')).toBeUndefined();
    expect(fieldText({}, 'email')).toBeUndefined();
  });
});
