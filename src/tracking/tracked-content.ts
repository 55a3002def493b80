import { Parser } from 'htmlparser2';
import type { MessageContent, MessageTracking } from '../outbox/message.entity';

/** The links a tracked message gets (TrackingTokens makes them). */
export interface TrackingLinks {
  openUrl(messageId: string): string;
  clickUrl(messageId: string, link: number): string;
  /** Of `recipient` when given, else the message's one for every recipient. */
  unsubscribeUrl(messageId: string, recipient?: string): string;
}

/** What of a stored message decides how it is tracked. */
export interface TrackedMessage {
  id: string;
  content: MessageContent;
  tracking: MessageTracking | null;
  listId: string | null;
}

/** A link of the HTML part that clicks are counted on, where its href value sits in the source. */
interface TrackableLink {
  /** The href as a browser reads it: entities decoded, surrounding spaces and embedded tabs/newlines dropped. */
  url: string;
  /** The attribute value's span in the source, quotes excluded. */
  start: number;
  end: number;
}

const LINK_TAGS = new Set(['a', 'area']);
const ABSOLUTE_HTTP = /^https?:\/\/[^/?#\s]/i;

/** A message's content as it is sent, and the URLs its click links stand for. */
export interface TrackedContent {
  content: MessageContent;
  /** Entry i is where the click URL of link i leads (empty unless clicks are tracked): recorded before the message leaves. */
  clickLinks: string[];
}

/**
 * Whether a message carries unsubscribe links and List-Unsubscribe headers (issue 35): a list send's, and a send
 * that asked for them (`tracking.unsubscribe`, which batch sends store on unless they said false). Never because
 * opens or clicks are tracked: a tracked receipt or password reset offers no unsubscribe.
 */
export function carriesUnsubscribe(message: Pick<TrackedMessage, 'tracking' | 'listId'>): boolean {
  return message.listId !== null || message.tracking?.unsubscribe === true;
}

/**
 * The content to compose for a stored message (D-22): with `clicks`, every trackable link of the HTML part
 * points at its click URL; with `opens`, a 1×1 pixel ends the body; when it carries unsubscribe links
 * (carriesUnsubscribe), the RFC 8058 List-Unsubscribe headers (unless the sender set List-Unsubscribe), with the
 * message's link for every recipient: recipientContent makes each recipient's copy. Pure and deterministic: the
 * same message gives the same content and links at every attempt.
 */
export function trackedContent(message: TrackedMessage, links: TrackingLinks): TrackedContent {
  const { tracking, content } = message;
  let html = content.html;
  let clickLinks: string[] = [];
  if (html !== undefined && (tracking?.clicks || tracking?.opens)) {
    ({ html, clickLinks } = trackHtml(html, message.id, links, { clicks: Boolean(tracking.clicks), opens: Boolean(tracking.opens) }));
  }
  let headers = content.headers;
  if (carriesUnsubscribe(message) && !Object.keys(headers).some((name) => name.toLowerCase() === 'list-unsubscribe')) {
    headers = {
      ...headers,
      'List-Unsubscribe': `<${links.unsubscribeUrl(message.id)}>`,
      'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
    };
  }
  return { content: html === content.html && headers === content.headers ? content : { ...content, html, headers }, clickLinks };
}

/**
 * The copy of a tracked message's content for one recipient: the message's unsubscribe link for every recipient, in
 * the List-Unsubscribe header Mailroom added and in the subject, text and HTML parts (`{{unsubscribeUrl}}` rendered
 * once for all recipients), becomes the recipient's own, so that a one-click POST names its recipient and nobody else.
 */
export function recipientContent(content: MessageContent, messageId: string, links: TrackingLinks, recipient: string): MessageContent {
  const shared = links.unsubscribeUrl(messageId);
  const own = links.unsubscribeUrl(messageId, recipient);
  const swap = (part: string | undefined) => (part === undefined ? undefined : part.split(shared).join(own));
  const headers =
    content.headers['List-Unsubscribe'] === `<${shared}>` ? { ...content.headers, 'List-Unsubscribe': `<${own}>` } : content.headers;
  return {
    ...content,
    headers,
    subject: content.subject.split(shared).join(own),
    ...(content.text !== undefined ? { text: swap(content.text) } : {}),
    ...(content.html !== undefined ? { html: swap(content.html) } : {}),
  };
}

/**
 * The URLs clicks are counted on, in document order: the absolute http(s) hrefs of `<a>` and `<area>` tags
 * (not those in comments, scripts or styles), except the message's own unsubscribe URL. Link i of a click
 * token is entry i of this list for the stored HTML, so a click can only lead to a URL of its message.
 */
export function trackableLinks(html: string, ownUnsubscribeUrl: string): string[] {
  return scan(html, ownUnsubscribeUrl).links.map((link) => link.url);
}

function trackHtml(
  html: string,
  messageId: string,
  links: TrackingLinks,
  what: { clicks: boolean; opens: boolean },
): { html: string; clickLinks: string[] } {
  const { links: found, pixelAt } = scan(html, links.unsubscribeUrl(messageId));
  const splices: { start: number; end: number; text: string }[] = [];
  if (what.clicks)
    found.forEach((link, i) => splices.push({ start: link.start, end: link.end, text: escapeAttribute(links.clickUrl(messageId, i)) }));
  if (what.opens) {
    const at = pixelAt ?? html.length;
    splices.push({ start: at, end: at, text: pixel(links.openUrl(messageId)) });
  }
  // Spliced from the end, so that earlier offsets still hold; the rest of the source stays byte for byte.
  let result = html;
  for (const { start, end, text } of splices.sort((a, b) => b.start - a.start)) result = result.slice(0, start) + text + result.slice(end);
  return { html: result, clickLinks: what.clicks ? found.map((link) => link.url) : [] };
}

/** One pass of htmlparser2 over the source: the trackable links, and where the pixel goes (before `</body>`, else `</html>`). */
function scan(html: string, ownUnsubscribeUrl: string): { links: TrackableLink[]; pixelAt: number | null } {
  const links: TrackableLink[] = [];
  let tag = '';
  let hrefSeen = false;
  let bodyEnd: number | null = null;
  let htmlEnd: number | null = null;
  const parser = new Parser({
    onopentagname(name) {
      tag = name;
      hrefSeen = false;
    },
    onattribute(name, value, quote) {
      // A browser takes the first href of a tag and ignores repeats.
      if (!LINK_TAGS.has(tag) || name !== 'href' || hrefSeen) return;
      hrefSeen = true;
      if (quote === undefined) return; // `<a href>`: no value
      const url = browserUrl(value);
      if (!ABSOLUTE_HTTP.test(url) || url === ownUnsubscribeUrl || !URL.canParse(url)) return;
      // The parser's indices span the whole attribute (`href = "…"`); the value starts after the `=` and its quote.
      const source = html.slice(parser.startIndex, parser.endIndex);
      const start = parser.startIndex + /^[^\s=]+\s*=\s*/.exec(source)![0].length + (quote ? 1 : 0);
      const end = quote ? parser.endIndex - 1 : parser.endIndex;
      links.push({ url, start, end });
    },
    onclosetag(name, isImplied) {
      if (isImplied) return;
      if (name === 'body') bodyEnd ??= parser.startIndex;
      if (name === 'html') htmlEnd ??= parser.startIndex;
    },
  });
  parser.end(html);
  return { links, pixelAt: bodyEnd ?? htmlEnd };
}

/** What a browser does to an href before it parses the URL: trims C0 controls and spaces, drops tabs and newlines. */
function browserUrl(value: string): string {
  // eslint-disable-next-line no-control-regex
  return value.replace(/^[\x00-\x20]+|[\x00-\x20]+$/g, '').replace(/[\t\n\r]/g, '');
}

function pixel(url: string): string {
  return (
    `<img src="${escapeAttribute(url)}" alt="" width="1" height="1" border="0" ` +
    'style="display:block;width:1px;height:1px;border:0;margin:0;padding:0" />'
  );
}

function escapeAttribute(value: string): string {
  return value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
