import { createHash, type KeyObject, sign as signAsync } from 'node:crypto';
import { promisify } from 'node:util';
import dkimSign from 'nodemailer/lib/dkim/sign';
import { foldLines } from 'nodemailer/lib/mime-funcs';
import { normalizeDomain } from 'nodemailer/lib/shared';

const rsaSign = promisify(signAsync);

/** A domain's DKIM key, parsed once: parsing the PEM costs more than the signature itself. */
export interface DkimKey {
  domainName: string;
  keySelector: string;
  privateKey: KeyObject;
  /** The header fields to sign, colon-separated (DKIM_SIGNED_HEADERS). */
  headerFieldNames: string;
}

/**
 * nodemailer's default list plus List-Unsubscribe-Post: RFC 8058 one-click counts only when the signature
 * covers both List-Unsubscribe headers (Gmail and Yahoo check it).
 */
export const DKIM_SIGNED_HEADERS =
  'From:Sender:Reply-To:Subject:Date:Message-ID:To:Cc:MIME-Version:Content-Type:Content-Transfer-Encoding:Content-ID:' +
  'Content-Description:Resent-Date:Resent-From:Resent-Sender:Resent-To:Resent-Cc:Resent-Message-ID:In-Reply-To:References:' +
  'List-Id:List-Help:List-Unsubscribe:List-Unsubscribe-Post:List-Subscribe:List-Post:List-Owner:List-Archive:OTP-Token';

/**
 * DKIM-signs a message (RFC 6376, rsa-sha256, relaxed/relaxed) the way nodemailer's `dkim` option does, byte for
 * byte, except that the RSA signature is computed by `crypto.sign` in libuv's thread pool: signing is a quarter
 * of a delivery's CPU, and nodemailer signs synchronously on the event loop. The header canonicalisation is
 * nodemailer's own; the body hash and the header parse follow its rules (bare LF ends a line, a lone CR is
 * content). `dkim-signer.spec.ts` holds both to nodemailer's output.
 */
export async function signMessage(source: Buffer, key: DkimKey): Promise<Buffer> {
  const raw = withLastLineBreak(source);
  const split = headerEnd(raw);
  const rawHeaders = raw.subarray(0, split);
  const body = raw.subarray(split);
  const bodyHash = createHash('sha256').update(relaxedBody(body), 'latin1').digest('base64');

  const canonical = dkimSign.relaxedHeaders(parseHeaderFields(rawHeaders.toString('latin1')), key.headerFieldNames);
  const field = signatureFieldWithoutB(key, canonical.fieldNames, bodyHash);
  const signedData = `${canonical.headers}dkim-signature:${relaxedHeaderValue(field)}`;
  const signature = (await rsaSign('sha256', Buffer.from(signedData, 'latin1'), key.privateKey)).toString('base64');
  const folded = signature.replace(/(^.{73}|.{75}(?!\r?\n|\r))/g, '$&\r\n ').trim();
  return Buffer.concat([Buffer.from(`${field}${folded}\r\n`), rawHeaders, body]);
}

/** nodemailer's transport ends a raw message with a line break before it signs (LF after a last CR, else CRLF). */
function withLastLineBreak(raw: Buffer): Buffer {
  const last = raw.length ? raw[raw.length - 1] : -1;
  if (last === 0x0a) return raw;
  return Buffer.concat([raw, Buffer.from(last === 0x0d ? '\n' : '\r\n')]);
}

/** Where the body starts: after the first empty line (LF LF or LF CR LF), or the end when there is none. */
function headerEnd(raw: Buffer): number {
  const candidates = [raw.indexOf('\n\n'), raw.indexOf('\n\r\n')].filter((i) => i >= 0);
  if (candidates.length === 0) return raw.length;
  const at = Math.min(...candidates);
  return at + (raw[at + 1] === 0x0d ? 3 : 2);
}

/** Header fields, unfolded (continuation lines start with SP or HTAB), each with its lower-cased name. */
function parseHeaderFields(headers: string): { key: string; line: string }[] {
  const fields: string[] = [];
  for (const line of headers.split(/\r?\n/)) {
    if (fields.length && /^[ \t]/.test(line)) fields[fields.length - 1] += `\n${line}`;
    else fields.push(line);
  }
  return fields
    .filter((line) => /[^ \t\r]/.test(line))
    .map((line) => ({
      key: line
        .slice(0, Math.max(0, line.indexOf(':')))
        .replace(/^[ \t]+|[ \t]+$/g, '')
        .toLowerCase(),
      line,
    }));
}

/**
 * The relaxed body (RFC 6376 §3.4.4) as a latin1 string: runs of SP/HTAB become one SP, whitespace at line ends
 * and empty lines at the end go, and a last line without a break gets one.
 */
export function relaxedBody(body: Buffer): string {
  const lines = body
    .toString('latin1')
    .split(/\r?\n/)
    .map((line) => line.replace(/[ \t]+/g, ' ').replace(/ $/, ''));
  let end = lines.length;
  while (end > 0 && lines[end - 1] === '') end--;
  let out = '';
  for (let i = 0; i < end; i++) out += `${lines[i]}\r\n`;
  return out;
}

/** The DKIM-Signature field up to `b=`, folded at 76 columns, as nodemailer writes it. */
function signatureFieldWithoutB(key: DkimKey, fieldNames: string, bodyHash: string): string {
  const clean = (value: string) => value.replace(/[\x00-\x1f\x7f;=]/g, ''); // eslint-disable-line no-control-regex
  const tags = [
    'v=1',
    'a=rsa-sha256',
    'c=relaxed/relaxed',
    `d=${normalizeDomain(clean(key.domainName), false)}`,
    'q=dns/txt',
    `s=${clean(key.keySelector)}`,
    `bh=${bodyHash}`,
    `h=${clean(fieldNames)}`,
  ].join('; ');
  return `${foldLines(`DKIM-Signature: ${tags}`, 76)};\r\n b=`;
}

function relaxedHeaderValue(line: string): string {
  return line
    .slice(line.indexOf(':') + 1)
    .replace(/\r?\n/g, '')
    .replace(/[ \t]+/g, ' ')
    .replace(/^ | $/g, '');
}
