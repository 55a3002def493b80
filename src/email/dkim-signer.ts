import { type KeyObject, sign as signAsync } from 'node:crypto';
import { once } from 'node:events';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { framedSource, type MessageSource } from './transport/mail-transport';
import { asciiDomain, foldLines, relaxedBodyHasher, relaxedHeaders } from './transport/nodemailer';

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
 * byte, except that the RSA signature is computed by `crypto.sign` in libuv's thread pool (signing is a quarter
 * of a delivery's CPU, and nodemailer signs synchronously on the event loop), and that the message is never held
 * whole: nodemailer's signer keeps it in memory (or, with `cacheDir`, spools it to disk) to send it after the
 * signature it needs all of it for. Here the source is read twice, once for its header and body hash, then again
 * behind the DKIM-Signature field (a composed message is the same bytes at every reading). The header
 * canonicalisation and the body hash (streaming) are nodemailer's own; the header parse follows its
 * rules (bare LF ends a line, a lone CR is content). `dkim-signer.spec.ts` holds it to nodemailer's output.
 */
export async function signSource(source: MessageSource, key: DkimKey): Promise<MessageSource> {
  const { rawHeaders, bodyHash, lastLineBreak } = await digest(source());
  const canonical = relaxedHeaders(parseHeaderFields(rawHeaders.toString('latin1')), key.headerFieldNames);
  const field = signatureFieldWithoutB(key, canonical.fieldNames, bodyHash);
  const signedData = `${canonical.headers}dkim-signature:${relaxedHeaderValue(field)}`;
  const signature = (await rsaSign('sha256', Buffer.from(signedData, 'latin1'), key.privateKey)).toString('base64');
  const folded = signature.replace(/(^.{73}|.{75}(?!\r?\n|\r))/g, '$&\r\n ').trim();
  const signatureField = Buffer.from(`${field}${folded}\r\n`);
  return framedSource(signatureField, source, lastLineBreak);
}

interface Digest {
  /** The header section, up to and with the empty line that ends it. */
  rawHeaders: Buffer;
  /** Base64 SHA-256 of the relaxed body. */
  bodyHash: string;
  /** What the signed message gets after the source (nodemailer's transport ends a raw message with a line break). */
  lastLineBreak: Buffer;
}

const LF = 0x0a;
const CR = 0x0d;

/**
 * Reads a message once: its header section (up to the first empty line, LF LF or LF CR LF; all of it when there
 * is none) and the hash of its relaxed body, as if it ended with a line break (LF after a last CR, else CRLF).
 */
async function digest(message: Readable): Promise<Digest> {
  const body = relaxedBodyHasher();
  body.resume(); // only its hash is wanted, not the bytes it passes on
  const hashed = once(body, 'hash') as Promise<[string]>;
  const headerParts: Buffer[] = [];
  let inHeader = true;
  // The last two bytes seen, for an empty line that spans chunks.
  let previous = -1;
  let beforePrevious = -1;
  const feed = async (chunk: Buffer) => {
    let bodyPart = chunk;
    if (inHeader) {
      let end = -1;
      for (let i = 0; i < chunk.length && end < 0; i++) {
        const byte = chunk[i];
        if (byte === LF && (previous === LF || (previous === CR && beforePrevious === LF))) end = i + 1;
        beforePrevious = previous;
        previous = byte;
      }
      if (end < 0) return void headerParts.push(chunk);
      headerParts.push(chunk.subarray(0, end));
      bodyPart = chunk.subarray(end);
      inHeader = false;
    }
    if (bodyPart.length && !body.write(bodyPart)) await once(body, 'drain');
  };
  let last = -1;
  for await (const data of message) {
    const chunk = Buffer.isBuffer(data) ? data : Buffer.from(data as string);
    if (chunk.length === 0) continue;
    last = chunk[chunk.length - 1];
    await feed(chunk);
  }
  const lastLineBreak = Buffer.from(last === LF ? '' : last === CR ? '\n' : '\r\n');
  await feed(lastLineBreak);
  body.end();
  const [bodyHash] = await hashed;
  return { rawHeaders: Buffer.concat(headerParts), bodyHash, lastLineBreak };
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

/** The DKIM-Signature field up to `b=`, folded at 76 columns, as nodemailer writes it. */
function signatureFieldWithoutB(key: DkimKey, fieldNames: string, bodyHash: string): string {
  const clean = (value: string) => value.replace(/[\x00-\x1f\x7f;=]/g, ''); // eslint-disable-line no-control-regex
  const tags = [
    'v=1',
    'a=rsa-sha256',
    'c=relaxed/relaxed',
    `d=${asciiDomain(clean(key.domainName))}`,
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
