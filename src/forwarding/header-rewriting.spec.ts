import { simpleParser } from 'mailparser';
import { forwardedFrom, rewriteFrom, withoutForgedResults } from './header-rewriting';

const BODY = 'Hello,\r\n\r\nFrom: not a header\r\n';

function message(...fields: string[]): Buffer {
  return Buffer.from(`${fields.join('\r\n')}\r\n\r\n${BODY}`);
}

describe('header rewriting of forwarded mail', () => {
  it('replaces From with an address of the forwarding domain and puts the original in Reply-To, the rest kept byte for byte', () => {
    const source = message('Received: from a', 'From: "Alice Example"\r\n <alice@spf-only.test>', 'To: info@fwd.test', 'Subject: hi');
    const rewritten = rewriteFrom(source, { name: 'Alice Example', address: 'alice@spf-only.test' }, 'fwd.test');
    expect(rewritten.toString()).toBe(
      'Received: from a\r\n' +
        'From: "Alice Example via fwd.test" <alice.at.spf-only.test@fwd.test>\r\n' +
        'Reply-To: "Alice Example"\r\n <alice@spf-only.test>\r\n' +
        `To: info@fwd.test\r\nSubject: hi\r\n\r\n${BODY}`,
    );
  });

  it('keeps a Reply-To the author set, and names the author by address when there is no display name', async () => {
    const source = message('From: bob@spf-only.test', 'Reply-To: team@spf-only.test', 'Subject: hi');
    const parsed = await simpleParser(rewriteFrom(source, { name: '', address: 'bob@spf-only.test' }, 'fwd.test'));
    expect(parsed.from?.value).toEqual([{ name: 'bob@spf-only.test via fwd.test', address: 'bob.at.spf-only.test@fwd.test' }]);
    expect(parsed.replyTo?.value).toEqual([{ name: '', address: 'team@spf-only.test' }]);
    expect(parsed.text).toBe('Hello,\n\nFrom: not a header\n');
  });

  it('encodes a display name that is not ASCII, escapes quotes, and keeps the local part a dot-atom of at most 64 characters', async () => {
    const name = 'Zoë "Z" Ångström — Ünïcödé Fœrwarding Tëst Nämé That Goes On';
    const from = forwardedFrom({ name, address: `${'very.long"local'.repeat(6)}@spf-only.test` }, 'fwd.test');
    const parsed = await simpleParser(Buffer.from(`From: ${from}\r\n\r\nx`));
    expect(parsed.from?.value[0].name).toBe(`${name} via fwd.test`);
    const local = parsed.from!.value[0].address!.split('@')[0];
    expect(local.length).toBeLessThanOrEqual(64);
    expect(local).toMatch(/^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/);
    expect(forwardedFrom({ name: 'Say "hi" \\o/', address: 'a@b.test' }, 'fwd.test')).toBe(
      '"Say \\"hi\\" \\\\o/ via fwd.test" <a.at.b.test@fwd.test>',
    );
  });

  it('works on LF-only messages and leaves a message without From as it is', () => {
    const lf = Buffer.from('From: a@b.test\nSubject: x\n\nbody\n');
    expect(rewriteFrom(lf, { name: 'A', address: 'a@b.test' }, 'fwd.test').toString()).toBe(
      'From: "A via fwd.test" <a.at.b.test@fwd.test>\nReply-To: a@b.test\nSubject: x\n\nbody\n',
    );
    const noFrom = message('Subject: x');
    expect(rewriteFrom(noFrom, { name: '', address: 'a@b.test' }, 'fwd.test')).toBe(noFrom);
  });

  it('removes Authentication-Results that claim to be ours, keeps others, and returns the same bytes when there are none', () => {
    const source = message(
      'Authentication-Results: MX.Mailroom.test; dmarc=pass header.from=fwd.test',
      'Authentication-Results: mx.google.com;\r\n dkim=pass',
      'Authentication-Results: (forged) mx.mailroom.test 1; spf=pass',
      'Subject: x',
    );
    expect(withoutForgedResults(source, 'mx.mailroom.test').toString()).toBe(
      `Authentication-Results: mx.google.com;\r\n dkim=pass\r\nSubject: x\r\n\r\n${BODY}`,
    );
    const clean = message('Subject: x');
    expect(withoutForgedResults(clean, 'mx.mailroom.test')).toBe(clean);
  });
});
