import { escapeHtml } from './escape-html';

describe('escapeHtml', () => {
  it('escapes the five HTML characters', () => {
    expect(escapeHtml(`<a href="x">Tom & 'Jerry'</a>`)).toBe('&lt;a href=&quot;x&quot;&gt;Tom &amp; &#39;Jerry&#39;&lt;/a&gt;');
  });

  it('leaves other text as it is', () => {
    expect(escapeHtml('Grüße, Ada — 100%')).toBe('Grüße, Ada — 100%');
  });
});
