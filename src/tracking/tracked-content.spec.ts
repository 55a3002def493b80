import type { MessageContent } from '../outbox/message.entity';
import { carriesUnsubscribe, recipientContent, trackableLinks, trackedContent, TrackedMessage, TrackingLinks } from './tracked-content';

const links: TrackingLinks = {
  openUrl: (id) => `https://mr.test/t/o/open-${id}`,
  clickUrl: (id, i) => `https://mr.test/t/c/click-${id}-${i}`,
  unsubscribeUrl: (id, recipient) => `https://mr.test/u/unsub-${id}${recipient ? `-${recipient}` : ''}`,
};
const UNSUBSCRIBE = links.unsubscribeUrl('msg_1');

function message(html: string | undefined, tracking: TrackedMessage['tracking'], extra: Partial<TrackedMessage> = {}): TrackedMessage {
  const content: MessageContent = {
    from: { name: '', address: 'hello@acme.test' },
    to: [{ name: '', address: 'ada@example.org' }],
    cc: [],
    replyTo: [],
    subject: 'Hi',
    text: 'Visit https://acme.test/plain',
    html,
    headers: {},
    attachments: [],
    date: '2030-01-01T00:00:00.000Z',
  };
  return { id: 'msg_1', content, tracking, listId: null, ...extra };
}

const clicks = (html: string) => trackedContent(message(html, { clicks: true }), links).content.html!;

describe('trackableLinks', () => {
  it('lists absolute http(s) hrefs of <a> and <area> in document order, entities decoded', () => {
    const html =
      '<p><a href="https://acme.test/a?x=1&amp;y=2">A</a> <map><area href=\'HTTP://acme.test/b\'></map>' +
      '<a title="t" HREF = http://acme.test/c>C</a><a href="&#104;ttps://acme.test/&#x64;">D</a></p>';
    expect(trackableLinks(html, UNSUBSCRIBE)).toEqual([
      'https://acme.test/a?x=1&y=2',
      'HTTP://acme.test/b',
      'http://acme.test/c',
      'https://acme.test/d',
    ]);
  });

  it('leaves out mailto:, tel:, anchors, relative and protocol-relative links, empty hrefs and the unsubscribe URL', () => {
    const html =
      '<a href="mailto:ada@example.org">m</a><a href="tel:+4930123">t</a><a href="#top">#</a><a href="/relative">r</a>' +
      `<a href="//acme.test/x">p</a><a href="">e</a><a href>n</a><a href="javascript:alert(1)">j</a><a href="${UNSUBSCRIBE}">u</a>` +
      '<a href="https://acme.test/kept">k</a>';
    expect(trackableLinks(html, UNSUBSCRIBE)).toEqual(['https://acme.test/kept']);
  });

  it('ignores links inside comments, scripts, styles and textareas, and other tags’ href', () => {
    const html =
      '<!-- <a href="https://acme.test/comment">c</a> --><script>document.write(\'<a href="https://acme.test/script">\')</script>' +
      '<style>a[href="https://acme.test/style"]{}</style><textarea><a href="https://acme.test/textarea"></textarea>' +
      '<link href="https://acme.test/style.css"><base href="https://acme.test/"><a href="https://acme.test/real">r</a>';
    expect(trackableLinks(html, UNSUBSCRIBE)).toEqual(['https://acme.test/real']);
  });

  it('takes the first href of a tag, as browsers do, and the URL a browser reads from a padded value', () => {
    expect(trackableLinks('<a href=" https://acme.test/first\n" href="https://acme.test/second">x</a>', UNSUBSCRIBE)).toEqual([
      'https://acme.test/first',
    ]);
    expect(trackableLinks('<a href="https://acme.test/pa\nth">x</a>', UNSUBSCRIBE)).toEqual(['https://acme.test/path']);
  });
});

describe('trackedContent: clicks', () => {
  it('replaces each trackable href by its click URL, numbered like trackableLinks, and keeps every other byte', () => {
    const html =
      '<html><body>\n<a class="x" href="https://acme.test/a?x=1&amp;y=2">A</a>\n<!-- <a href="https://acme.test/c"> -->' +
      '<a href=\'https://acme.test/b\' data-x="1">B</a><a href=https://acme.test/u>U</a><a href="mailto:a@b.c">M</a></body></html>';
    expect(clicks(html)).toBe(
      '<html><body>\n<a class="x" href="https://mr.test/t/c/click-msg_1-0">A</a>\n<!-- <a href="https://acme.test/c"> -->' +
        '<a href=\'https://mr.test/t/c/click-msg_1-1\' data-x="1">B</a><a href=https://mr.test/t/c/click-msg_1-2>U</a>' +
        '<a href="mailto:a@b.c">M</a></body></html>',
    );
    expect(trackableLinks(html, UNSUBSCRIBE)).toEqual(['https://acme.test/a?x=1&y=2', 'https://acme.test/b', 'https://acme.test/u']);
  });

  it('gives the URL each click link stands for, in link order, from the same pass; none without click tracking', () => {
    const html = '<a href="https://acme.test/a?x=1&amp;y=2">A</a><a href="mailto:a@b.c">M</a><a href=\'https://acme.test/b\'>B</a>';
    expect(trackedContent(message(html, { clicks: true, opens: true }), links).clickLinks).toEqual([
      'https://acme.test/a?x=1&y=2',
      'https://acme.test/b',
    ]);
    expect(trackedContent(message(html, { opens: true, unsubscribe: true }), links).clickLinks).toEqual([]);
    expect(trackedContent(message(undefined, { clicks: true }), links).clickLinks).toEqual([]);
  });

  it('encodes the new value for the attribute', () => {
    const odd: TrackingLinks = { ...links, clickUrl: () => 'https://mr.test/t/c/a&b"c' };
    const out = trackedContent(message('<a href="https://acme.test/">x</a>', { clicks: true }), odd).content.html;
    expect(out).toBe('<a href="https://mr.test/t/c/a&#38;b&#34;c">x</a>');
  });

  it('rewrites neither the text part nor a message tracked for opens only', () => {
    const tracked = trackedContent(message('<a href="https://acme.test/">x</a>', { opens: true }), links).content;
    expect(tracked.html).toContain('<a href="https://acme.test/">x</a>');
    expect(trackedContent(message('<a href="https://acme.test/">x</a>', { clicks: true }), links).content.text).toBe(
      'Visit https://acme.test/plain',
    );
  });

  it('gives the same bytes every time (deterministic)', () => {
    const m = message('<body><a href="https://acme.test/">x</a></body>', { clicks: true, opens: true, unsubscribe: true });
    expect(trackedContent(m, links).content).toEqual(trackedContent(m, links).content);
  });
});

describe('trackedContent: opens', () => {
  const pixel =
    '<img src="https://mr.test/t/o/open-msg_1" alt="" width="1" height="1" border="0" ' +
    'style="display:block;width:1px;height:1px;border:0;margin:0;padding:0" />';
  const opens = (html: string) => trackedContent(message(html, { opens: true }), links).content.html;

  it('puts the pixel right before </body>, whatever its case', () => {
    expect(opens('<html><body><p>Hi</p></body></html>')).toBe(`<html><body><p>Hi</p>${pixel}</body></html>`);
    expect(opens('<HTML><BODY><p>Hi</BODY></HTML>')).toBe(`<HTML><BODY><p>Hi${pixel}</BODY></HTML>`);
  });

  it('is not fooled by a </body> in a comment or a script', () => {
    expect(opens('<body><!-- </body> --><script>"</body>"</script><p>x</p></body>')).toBe(
      `<body><!-- </body> --><script>"</body>"</script><p>x</p>${pixel}</body>`,
    );
  });

  it('goes before </html> when there is no body element, and at the end of a fragment', () => {
    expect(opens('<html><p>x</p></html>')).toBe(`<html><p>x</p>${pixel}</html>`);
    expect(opens('<p>Hi</p>')).toBe(`<p>Hi</p>${pixel}`);
  });

  it('adds nothing to a message without an HTML part', () => {
    const tracked = trackedContent(message(undefined, { opens: true, clicks: true }), links).content;
    expect(tracked.html).toBeUndefined();
    expect(tracked.text).toBe('Visit https://acme.test/plain');
  });

  it('with clicks too: links rewritten and the pixel placed, in one pass over the original', () => {
    const out = trackedContent(message('<body><a href="https://acme.test/">x</a></body>', { opens: true, clicks: true }), links).content
      .html;
    expect(out).toBe(`<body><a href="https://mr.test/t/c/click-msg_1-0">x</a>${pixel}</body>`);
  });
});

describe('trackedContent: List-Unsubscribe', () => {
  const oneClick = { 'List-Unsubscribe': `<${UNSUBSCRIBE}>`, 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' };

  it('adds the RFC 8058 headers to a send that asked for unsubscribe links and to a list send', () => {
    expect(
      trackedContent(
        message('<p>x</p>', { unsubscribe: true }, { content: { ...message('', null).content, headers: { 'X-Tag': 'a' } } }),
        links,
      ).content.headers,
    ).toEqual({ 'X-Tag': 'a', ...oneClick });
    expect(trackedContent(message('<p>x</p>', null, { listId: 'list_1' }), links).content.headers).toEqual(oneClick);
    expect(trackedContent(message('<p>x</p>', { unsubscribe: false }, { listId: 'list_1' }), links).content.headers).toEqual(oneClick);
  });

  it('adds nothing because opens or clicks are tracked: a tracked receipt offers no unsubscribe', () => {
    for (const tracking of [{ opens: true }, { clicks: true }, { opens: true, clicks: true, unsubscribe: false }]) {
      const tracked = message('<body><a href="https://acme.test/">x</a></body>', tracking);
      expect(trackedContent(tracked, links).content.headers).toEqual({});
      expect(carriesUnsubscribe(tracked)).toBe(false);
    }
    expect(carriesUnsubscribe(message('', { unsubscribe: true }))).toBe(true);
    expect(carriesUnsubscribe(message('', null, { listId: 'list_1' }))).toBe(true);
  });

  it('adds nothing to an untracked message outside a list, nor where all flags are off', () => {
    const plain = message('<a href="https://acme.test/">x</a>', null);
    expect(trackedContent(plain, links).content).toBe(plain.content);
    const off = message('<a href="https://acme.test/">x</a>', { opens: false, clicks: false, unsubscribe: false });
    expect(trackedContent(off, links).content).toBe(off.content);
  });

  it('keeps the sender’s own List-Unsubscribe and adds no one-click header to it', () => {
    const own = message('<p>x</p>', { unsubscribe: true });
    own.content.headers = { 'list-unsubscribe': '<mailto:leave@acme.test>' };
    expect(trackedContent(own, links).content.headers).toEqual({ 'list-unsubscribe': '<mailto:leave@acme.test>' });
  });
});

describe('recipientContent', () => {
  const shared = links.unsubscribeUrl('msg_1');
  const own = links.unsubscribeUrl('msg_1', 'bo@example.org');

  it('gives the recipient its own link in the header Mailroom added and wherever the body has the message’s', () => {
    const m = message(`<body><a href="${shared}">Unsubscribe</a><a href="https://acme.test/">x</a></body>`, {
      unsubscribe: true,
      clicks: true,
    });
    m.content.text = `Leave: ${shared}\nAgain: ${shared}`;
    m.content.subject = `News (leave: ${shared})`;
    const tracked = trackedContent(m, links).content;
    const copy = recipientContent(tracked, 'msg_1', links, 'bo@example.org');
    expect(copy.subject).toBe(`News (leave: ${own})`);
    expect(copy.headers).toEqual({ 'List-Unsubscribe': `<${own}>`, 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' });
    expect(copy.html).toBe(`<body><a href="${own}">Unsubscribe</a><a href="https://mr.test/t/c/click-msg_1-0">x</a></body>`);
    expect(copy.text).toBe(`Leave: ${own}\nAgain: ${own}`);
    // The message's content is left as it was: every copy starts from it.
    expect(tracked.headers['List-Unsubscribe']).toBe(`<${shared}>`);
    expect(tracked.subject).toBe(`News (leave: ${shared})`);
  });

  it('keeps the sender’s own List-Unsubscribe, and a message without a text or HTML part as it is', () => {
    const m = message(undefined, { unsubscribe: true });
    m.content.headers = { 'List-Unsubscribe': '<mailto:leave@acme.test>' };
    delete m.content.text;
    const copy = recipientContent(trackedContent(m, links).content, 'msg_1', links, 'bo@example.org');
    expect(copy.headers).toEqual({ 'List-Unsubscribe': '<mailto:leave@acme.test>' });
    expect(copy).not.toHaveProperty('text');
    expect(copy.html).toBeUndefined();
  });
});
