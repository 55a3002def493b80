import { headerBounds, RawField, rawFields } from './received-message';

/** The longest local part of an address (RFC 5321 4.5.3.1.1). */
const MAX_LOCAL_PART = 64;
/** Display names longer than this are cut: the header line stays well under RFC 5322's 998 characters. */
const MAX_DISPLAY_NAME = 150;
/** UTF-8 bytes per encoded word: 4 characters of base64 per 3 bytes, so that each word stays under 75 characters. */
const ENCODED_WORD_BYTES = 45;

/** An author as the From header names it: the decoded display name ('' for none) and the address. */
export interface Author {
  name: string;
  address: string;
}

/**
 * The message with its From field replaced by an address of the forwarding domain, as mailing lists and forwarders
 * do for authors whose domain asks receivers to reject what fails DMARC: `"Ada Lovelace via fwd.test"
 * <ada.at.example.com@fwd.test>`. The original From field's value becomes the Reply-To, unless the message has one
 * already, so that replies reach the author. The body and every other field are kept byte for byte.
 */
export function rewriteFrom(source: Buffer, author: Author, forwardingDomain: string): Buffer {
  return editHeader(source, (fields) => {
    const index = fields.findIndex((f) => f.name.toLowerCase() === 'from');
    if (index < 0) return fields;
    const original = fields[index];
    // The message's own line ends (a message written with LF alone stays so).
    const eol = /\r\n$/.test(original.raw) || !original.raw.endsWith('\n') ? '\r\n' : '\n';
    const from = forwardedFrom(author, forwardingDomain).replace(/\r\n/g, eol);
    const replacement: RawField[] = [{ name: 'From', raw: `From: ${from}${eol}` }];
    if (!fields.some((f) => f.name.toLowerCase() === 'reply-to')) {
      const value = original.raw.slice(original.raw.indexOf(':') + 1);
      replacement.push({ name: 'Reply-To', raw: `Reply-To:${value.endsWith('\n') ? value : value + eol}` });
    }
    return [...fields.slice(0, index), ...replacement, ...fields.slice(index + 1)];
  });
}

/**
 * The message without the Authentication-Results fields that claim to be ours (`authservId`): a border server
 * removes them (RFC 8601 section 5), or a sender could forge our verdict. The same buffer when there are none.
 */
export function withoutForgedResults(source: Buffer, authservId: string): Buffer {
  const id = authservId.toLowerCase();
  return editHeader(source, (fields) =>
    fields.filter((f) => f.name.toLowerCase() !== 'authentication-results' || authservIdOf(f.raw) !== id),
  );
}

/** `"<name> via <domain>" <local.at.domain@forwardingDomain>`, the name encoded when it is not plain ASCII. */
export function forwardedFrom(author: Author, forwardingDomain: string): string {
  const at = author.address.lastIndexOf('@');
  const local = author.address.slice(0, at);
  const domain = author.address.slice(at + 1);
  const name = (author.name.trim() || author.address).slice(0, MAX_DISPLAY_NAME);
  return `${phrase(`${name} via ${forwardingDomain}`)} <${localPart(`${local}.at.${domain}`)}@${forwardingDomain}>`;
}

/** A dot-atom local part for the author's address: other characters become `_`, at most 64 characters. */
function localPart(text: string): string {
  const atom = text
    .toLowerCase()
    .replace(/[^a-z0-9!#$%&'*+/=?^_`{|}~.-]/g, '_')
    .replace(/\.{2,}/g, '.')
    .replace(/^\.+/, '');
  return atom.slice(0, MAX_LOCAL_PART).replace(/\.+$/, '') || 'forwarded';
}

/** A display name as a quoted string, or as RFC 2047 encoded words when it holds more than printable ASCII. */
function phrase(text: string): string {
  // eslint-disable-next-line no-control-regex
  const clean = text.replace(/[\x00-\x1f\x7f]+/g, ' ');
  if (/^[\x20-\x7e]*$/.test(clean)) return `"${clean.replace(/["\\]/g, '\\$&')}"`;
  const words: string[] = [];
  let chunk = '';
  for (const char of clean) {
    if (Buffer.byteLength(chunk + char) > ENCODED_WORD_BYTES) {
      words.push(chunk);
      chunk = '';
    }
    chunk += char;
  }
  if (chunk) words.push(chunk);
  return words.map((word) => `=?UTF-8?B?${Buffer.from(word).toString('base64')}?=`).join('\r\n ');
}

/** The authserv-id of an Authentication-Results field: its value up to the first `;` (a version after it dropped). */
function authservIdOf(raw: string): string {
  const value = raw.slice(raw.indexOf(':') + 1).replace(/\([^)]*\)/g, ' ');
  return value.split(';')[0].trim().split(/\s+/)[0].toLowerCase();
}

/**
 * Applies `edit` to the header fields (read as latin1, so that every byte comes back as it was); the body after the
 * empty line is kept as it is. The same buffer when the fields come back unchanged.
 */
function editHeader(source: Buffer, edit: (fields: RawField[]) => RawField[]): Buffer {
  const { end } = headerBounds(source);
  const fields = rawFields(source.subarray(0, end).toString('latin1'));
  const edited = edit(fields);
  if (edited.length === fields.length && edited.every((f, i) => f === fields[i])) return source;
  return Buffer.concat([Buffer.from(edited.map((f) => f.raw).join(''), 'latin1'), source.subarray(end)]);
}
