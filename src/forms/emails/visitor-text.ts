/**
 * What form emails do to text a visitor typed before showing it: bidi controls made visible (notification and
 * acknowledgment), links defanged (acknowledgment, which goes to an address the visitor chose).
 */

/** Bidi embedding, override and isolate controls and the directional marks: they can make text read backwards. */
const BIDI_CONTROLS = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** `a\u202Eb` → `a<U+202E>b`: the reader sees that the text holds a direction control, and it no longer turns the text. */
export function escapeBidi(text: string): string {
  return text.replace(BIDI_CONTROLS, (char) => `<U+${char.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}>`);
}

/** A scheme followed by `//` (`https://`, `ftp://`): mail clients make a link of it. */
const URL_SCHEME = /\b([a-z][a-z0-9+.-]{0,30}):\/\//gi;
/**
 * A dot between a letter or digit and a letter, as in every hostname (`evil.test`, `www.evil.test`, `ada@evil.test`),
 * ASCII or the ideographic, full-width and half-width dots clients read as one. Lookarounds only: linear in the text.
 */
const HOSTNAME_DOT = /(?<=[\p{L}\p{N}])[.\u3002\uff0e\uff61](?=\p{L})/gu;
const IPV4 = /\b\d{1,3}(?:\.\d{1,3}){3}\b/g;

/**
 * Visitor text as no mail client links it: `https://evil.test/login` → `hxxps[:]//evil[.]test/login`,
 * `www.evil.test` → `www[.]evil[.]test`. Readable by a person, who can still retype it; nothing to click.
 */
export function defangLinks(text: string): string {
  return text
    .replace(URL_SCHEME, (_scheme, name: string) => `${name.replace(/^(h)tt(ps?)$/i, '$1xx$2')}[:]//`)
    .replace(HOSTNAME_DOT, '[.]')
    .replace(IPV4, (address) => address.replace(/\./g, '[.]'));
}
