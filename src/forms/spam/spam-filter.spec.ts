import { contentFilterReason, DEFAULT_HONEYPOT, trippedHoneypot } from './spam-filter';

describe('trippedHoneypot', () => {
  it('is null when every honeypot is absent, empty or whitespace', () => {
    expect(trippedHoneypot({ name: 'Ann' }, DEFAULT_HONEYPOT)).toBeNull();
    expect(trippedHoneypot({ _service_honeypot: '' }, DEFAULT_HONEYPOT)).toBeNull();
    expect(trippedHoneypot({ _service_honeypot: '  \n' }, DEFAULT_HONEYPOT)).toBeNull();
    expect(trippedHoneypot({ _service_honeypot: ['', ' '] }, DEFAULT_HONEYPOT)).toBeNull();
    expect(trippedHoneypot({ _gotcha: '', botcheck: '' }, DEFAULT_HONEYPOT)).toBeNull();
  });

  it('names the default honeypot when it holds text', () => {
    expect(trippedHoneypot({ _service_honeypot: 'http://spam.example' }, DEFAULT_HONEYPOT)).toBe('_service_honeypot');
    expect(trippedHoneypot({ _service_honeypot: ['', 'x'] }, DEFAULT_HONEYPOT)).toBe('_service_honeypot');
  });

  it('checks the configured name and still the default ones', () => {
    expect(trippedHoneypot({ website: 'bot' }, 'website')).toBe('website');
    expect(trippedHoneypot({ _service_honeypot: 'bot' }, 'website')).toBe('_service_honeypot');
    expect(trippedHoneypot({ _gotcha: 'bot' }, 'website')).toBe('_gotcha');
    expect(trippedHoneypot({ website: '' }, 'website')).toBeNull();
  });

  it('traps Formspree’s and Basin’s _gotcha and Web3Forms’ botcheck checkbox, whatever its value', () => {
    expect(trippedHoneypot({ _gotcha: 'bot' })).toBe('_gotcha');
    for (const ticked of ['on', 'true', 'false', '1']) expect(trippedHoneypot({ botcheck: ticked })).toBe('botcheck');
    expect(trippedHoneypot({ message: 'botcheck', gotcha: 'x' })).toBeNull();
  });
});

describe('contentFilterReason', () => {
  const message = (text: string) => ({ name: 'Ann', email: 'ann@example.com', message: text });

  describe('lets ordinary messages through', () => {
    it.each([
      ['plain text', 'Hello, I would like a quote for 20 boxes. Thanks!'],
      ['one link', 'Our site https://shop.example.com/products is down since this morning.'],
      ['three links', 'See https://a.example, http://b.example/x and www.c.example please.'],
      ['German', 'Guten Tag, ich hätte gerne ein Angebot für Ihre Dienstleistungen. Grüße, Jürgen'],
      ['Russian', 'Здравствуйте! Подскажите, пожалуйста, сроки доставки в Москву?'],
      ['Japanese', 'こんにちは。注文の配送状況を教えてください。よろしくお願いします。'],
      ['Arabic', 'مرحبا، أريد معرفة المزيد عن خدماتكم.'],
      ['a script tag', 'Your form breaks with <script>alert(1)</script> in the name, FYI.'],
      [
        'a code snippet',
        'const x = arr.map((v) => v * 2);\nif (x[0] !== 1) { throw new Error(\'bad\'); }\n<div class="a">{{ name }}</div>',
      ],
      ['a relative HTML link', 'My template has <a href="/about">About</a> and it renders wrong.'],
      ['words that contain a phrase', 'The casinos in town and our crypto-investments team; the postmaster guest.'],
      ['a word ending in a phrase', 'Does lex specialis derogat legi generali apply to my contract?'],
      ['casino, forex or work from home alone', 'I worked at a casino, now trade forex and work from home.'],
    ])('%s', (_label, text) => {
      expect(contentFilterReason(message(text))).toBeNull();
    });

    it('at high, one link', () => {
      expect(contentFilterReason(message('Broken page: https://shop.example.com/cart'), 'high')).toBeNull();
    });
  });

  describe('catches spam', () => {
    it.each([
      ['a pharma word, any case', 'Cheap VIAGRA here', 'spam phrase "viagra"'],
      ['a phrase across line breaks', 'We offer SEO\nServices for your site', 'spam phrase "seo service"'],
      ['a plural', 'Buy quality backlinks today', 'spam phrase "backlink"'],
      ['a plural in -es', 'Swiss replica watches', 'spam phrase "replica watch"'],
      ['a phrase after punctuation', 'Hi!Guest post on your blog?', 'spam phrase "guest post"'],
      ['more than three links', 'a http://1.example b https://2.example c www.3.example d https://4.example', 'too many links (4)'],
      ['the same link four times', 'https://x.example '.repeat(4), 'too many links (4)'],
      ['an HTML anchor', 'Nice site <a href="https://spam.example">click</a>', 'HTML or BBCode link'],
      ['a protocol-relative anchor', "<a class='x' href='//spam.example'>x</a>", 'HTML or BBCode link'],
      ['BBCode [url=', 'Great [url=https://spam.example]deal[/url]', 'HTML or BBCode link'],
      ['BBCode [link=', '[link=http://spam.example]deal[/link]', 'HTML or BBCode link'],
      ['BBCode [url]', '[url]http://spam.example[/url]', 'HTML or BBCode link'],
    ])('%s', (_label, text, reason) => {
      expect(contentFilterReason(message(text))).toBe(reason);
    });

    it('counts links across fields and repeated values', () => {
      const fields = { website: 'https://1.example', message: 'https://2.example https://3.example', urls: ['https://4.example'] };
      expect(contentFilterReason(fields)).toBe('too many links (4)');
    });

    it('in any user field, not only the message', () => {
      expect(contentFilterReason({ company: 'Online Casino Ltd', message: 'hi' })).toBe('spam phrase "online casino"');
    });
  });

  it('ignores control fields', () => {
    const control = { _redirect: 'https://a.example https://b.example https://c.example https://d.example', _subject: 'viagra' };
    expect(contentFilterReason({ ...control, message: 'Hello' })).toBeNull();
  });

  describe('levels', () => {
    const twoLinks = message('https://a.example and https://b.example');
    const anchor = message('<a href="https://spam.example">x</a>');

    it('low applies only the phrase list', () => {
      expect(contentFilterReason(message('https://1.example '.repeat(10)), 'low')).toBeNull();
      expect(contentFilterReason(anchor, 'low')).toBeNull();
      expect(contentFilterReason(message('cialis'), 'low')).toBe('spam phrase "cialis"');
    });

    it('high allows one link only', () => {
      expect(contentFilterReason(twoLinks, 'medium')).toBeNull();
      expect(contentFilterReason(twoLinks, 'high')).toBe('too many links (2)');
      expect(contentFilterReason(anchor, 'high')).toBe('HTML or BBCode link');
    });
  });
});
