import { htmlToText, textToHtml } from './html-text';

describe('textToHtml', () => {
  it('turns every kind of line break into <br> after escaping', () => {
    expect(textToHtml('a<b>\r\nb\rc\nd')).toBe('a&lt;b&gt;<br>b<br>c<br>d');
  });
});

describe('htmlToText', () => {
  it('keeps the text a reader sees, with block ends and <br> as line breaks', () => {
    const html =
      '<!DOCTYPE html><html><head><title>T</title><style>p { color: red }</style></head><body>' +
      '<h1>Hello&nbsp;Ada</h1><p>Line one<br>line <b>two</b></p><!-- hidden --><script>alert(1)</script>' +
      '<table><tr><td>name</td><td>Ada &amp; Bo</td></tr><tr><td>x</td><td>&lt;y&gt; &#233; &#x1F600;</td></tr></table></body></html>';
    expect(htmlToText(html)).toBe('Hello Ada\n\nLine one\nline two\n\nname Ada & Bo\nx <y> é 😀');
  });

  it('copes with unclosed tags and blocks, and leaves unknown entities', () => {
    expect(htmlToText('a <b unclosed')).toBe('a <b unclosed');
    expect(htmlToText('a<script>never closed')).toBe('a');
    expect(htmlToText('&bogus; &#0; &#xD800;')).toBe('&bogus; &#0; &#xD800;');
    expect(htmlToText('<header>Top</header><HEAD><TITLE>x</TITLE></HEAD>')).toBe('Top');
  });

  it('stays fast on hostile input', () => {
    const started = Date.now();
    htmlToText('<script'.repeat(50_000) + '<!--'.repeat(50_000) + '<'.repeat(100_000));
    expect(Date.now() - started).toBeLessThan(1000);
  });
});
