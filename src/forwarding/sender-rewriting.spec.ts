import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import { AppConfigService } from '../config/app-config.service';
import { SenderRewriting, SrsError } from './sender-rewriting';

/** postsrsd's tests/unit/test_srs2.c: secret `tops3cr3t` at 2020-01-01 00:01:00 UTC. */
const SECRET = 'tops3cr3t';
const PUBLISHED_TIME = 1577836860 * 1000;
const DAY = 86_400_000;
/** libsrs2's 4-character hash, as earlier versions wrote it: it verifies until the address expires. */
const PUBLISHED_SRS0 = 'SRS0=vmyz=2W=otherdomain.com=test@example.com';
// Made with Mail::SRS 0.31 (the Perl original libsrs2 was ported from) at the same time.
const SRS1_AT_FORWARDER2 = 'SRS1=JO9m=example.com==vmyz=2W=otherdomain.com=test@forwarder2.net';
/** The same senders as this version writes them: the layout is libsrs2's, the hash 8 base32 characters. */
const SRS0 = 'SRS0=XZWLH3A4=2W=otherdomain.com=test@example.com';
const SRS1_OF_PUBLISHED = 'SRS1=ETXWMYXV=example.com==vmyz=2W=otherdomain.com=test@forwarder2.net';

const srsAt = (time: number, secret: string = SECRET) => new SenderRewriting(secret, { now: () => time });

function outcome(reverse: () => string): string {
  try {
    return reverse();
  } catch (error) {
    if (error instanceof SrsError) return error.reason;
    throw error;
  }
}

describe('SenderRewriting', () => {
  const srs = srsAt(PUBLISHED_TIME);

  it('writes SRS0 in libsrs2’s layout with an 8-character base32 hash, and reverses it', () => {
    expect(srs.forward('test@otherdomain.com', 'example.com')).toBe(SRS0);
    expect(srs.reverse(SRS0)).toBe('test@otherdomain.com');
  });

  it('still reverses the published libsrs2 example and Mail::SRS’s SRS1 (4-character hashes written by earlier versions)', () => {
    expect(srs.reverse(PUBLISHED_SRS0)).toBe('test@otherdomain.com');
    expect(srs.reverse(SRS1_AT_FORWARDER2)).toBe(PUBLISHED_SRS0);
  });

  it('leaves a null sender and a sender already on the forwarding domain as they are', () => {
    expect(srs.forward('test@example.com', 'example.com')).toBe('test@example.com');
    expect(srs.forward('Test@EXAMPLE.com', 'example.COM')).toBe('Test@EXAMPLE.com');
    expect(srs.forward('', 'example.com')).toBe('');
  });

  it('rewrites a re-forwarded SRS0 sender to SRS1 that reverses to the SRS0 address at the first forwarder', () => {
    expect(srs.forward(PUBLISHED_SRS0, 'forwarder2.net')).toBe(SRS1_OF_PUBLISHED);
    expect(srs.reverse(SRS1_OF_PUBLISHED)).toBe(PUBLISHED_SRS0);
  });

  it('keeps the separator of an SRS0 sender written with `+`', () => {
    const srs1 = srs.forward('SRS0+HHHH=TT=orig.org=user@first.net', 'second.net');
    expect(srs1).toBe('SRS1=BODFJGHA=first.net=+HHHH=TT=orig.org=user@second.net');
    expect(srs.reverse(srs1)).toBe('SRS0+HHHH=TT=orig.org=user@first.net');
  });

  it('keeps an SRS1 sender SRS1 on a third hop, hashed with the third forwarder’s secret, still pointing at the first', () => {
    const third = srsAt(PUBLISHED_TIME, 'an0ther');
    const srs1 = third.forward(SRS1_OF_PUBLISHED, 'third.org');
    expect(srs1).toBe('SRS1=UME2MFBM=example.com==vmyz=2W=otherdomain.com=test@third.org');
    expect(third.reverse(srs1)).toBe(PUBLISHED_SRS0);
    expect(outcome(() => srs.reverse(srs1))).toBe('forged');
    // The SRS1 hash covers the first forwarder and the SRS0 part only, so the same secret gives the same hash.
    expect(srs.forward(SRS1_OF_PUBLISHED, 'third.org')).toBe('SRS1=ETXWMYXV=example.com==vmyz=2W=otherdomain.com=test@third.org');
  });

  it('reverses addresses whose case another MTA changed', () => {
    expect(srs.reverse(SRS0.toLowerCase())).toBe('test@otherdomain.com');
    expect(srs.reverse(SRS0.toUpperCase())).toBe('TEST@OTHERDOMAIN.COM');
    expect(srs.reverse(SRS1_OF_PUBLISHED.toLowerCase())).toBe('SRS0=vmyz=2w=otherdomain.com=test@example.com');
    expect(srs.reverse(PUBLISHED_SRS0.toLowerCase())).toBe('test@otherdomain.com');
  });

  it('keeps local parts holding `=` or a quoted `@`, and the original case', () => {
    const srs0 = srs.forward('Some.One=x@Other.Example', 'fwd.example');
    expect(srs0).toBe('SRS0=Q4XMV67V=2W=Other.Example=Some.One=x@fwd.example');
    expect(srs.reverse(srs0)).toBe('Some.One=x@Other.Example');
    expect(srs.reverse(srs.forward('a==b=@x.org', 'fwd.example'))).toBe('a==b=@x.org');
    expect(srs.reverse(srs.forward('"a@b"@x.org', 'fwd.example'))).toBe('"a@b"@x.org');
  });

  it('refuses a changed hash, a changed address and another secret’s address as forged', () => {
    expect(outcome(() => srs.reverse('SRS0=XZWLH3A5=2W=otherdomain.com=test@example.com'))).toBe('forged');
    expect(outcome(() => srs.reverse('SRS0=XZWLH3A4=2W=otherdomain.com=tess@example.com'))).toBe('forged');
    expect(outcome(() => srs.reverse('SRS0=XZWLH3A4=2W=otherdomain.org=test@example.com'))).toBe('forged');
    expect(outcome(() => srs.reverse('SRS1=ETXWMYXV=example.org==vmyz=2W=otherdomain.com=test@forwarder2.net'))).toBe('forged');
    expect(outcome(() => srsAt(PUBLISHED_TIME, 'other').reverse(SRS0))).toBe('forged');
    expect(outcome(() => srs.reverse('SRS0=vmya=2W=otherdomain.com=test@example.com'))).toBe('forged');
    expect(outcome(() => srs.reverse('SRS1=JO9m=example.org==vmyz=2W=otherdomain.com=test@forwarder2.net'))).toBe('forged');
  });

  it('refuses a hash of any other length, or one that is only the start of ours', () => {
    for (const hash of ['XZWLH3A', 'XZWLH3A4A', 'XZWLH3A4XZWLH3A4', 'XZW', 'vmyzX', 'vmy', ''.padEnd(8, '=')]) {
      const address = `SRS0=${hash}=2W=otherdomain.com=test@example.com`;
      expect([address, outcome(() => srs.reverse(address))]).toEqual([address, hash.includes('=') ? 'malformed' : 'forged']);
    }
  });

  it('takes a 4-character hash only on addresses stamped up to the last day earlier versions wrote them, and not once expired', () => {
    const lastLegacyDay = Date.UTC(2026, 11, 31);
    const legacyAt = (time: number) => legacyAddress(SECRET, time, 'ada@example.org', 'fwd.example');
    const written = legacyAt(lastLegacyDay);
    expect(outcome(() => srsAt(lastLegacyDay + 10 * DAY).reverse(written))).toBe('ada@example.org');
    expect(outcome(() => srsAt(lastLegacyDay + 21 * DAY).reverse(written))).toBe('ada@example.org');
    expect(outcome(() => srsAt(lastLegacyDay + 22 * DAY).reverse(written))).not.toBe('ada@example.org');
    // Stamped after that day: this version wrote it with its own hash, so a 4-character one is made up.
    expect(outcome(() => srsAt(lastLegacyDay + DAY).reverse(legacyAt(lastLegacyDay + DAY)))).toBe('forged');
    // An SRS1 address of ours has no stamp: the first forwarder's SRS0 stamp inside it decides.
    const srs1 = (stampTime: number) => {
      const srs0Rest = `=${legacyAt(stampTime).slice(5, legacyAt(stampTime).indexOf('@'))}`;
      return `SRS1=${legacyHash(SECRET, ['first.example', srs0Rest])}=first.example=${srs0Rest}@fwd.example`;
    };
    expect(outcome(() => srsAt(lastLegacyDay + 5 * DAY).reverse(srs1(lastLegacyDay)))).toMatch(/^SRS0=/);
    expect(outcome(() => srsAt(lastLegacyDay + 5 * DAY).reverse(srs1(lastLegacyDay + 5 * DAY)))).toBe('forged');
    expect(outcome(() => srsAt(lastLegacyDay + 30 * DAY).reverse(srs1(lastLegacyDay)))).toBe('forged');
  });

  it('hashes with the first of several secrets and verifies with any, so that a key rotation keeps old addresses working', () => {
    const rotated = new SenderRewriting(['n3w', SECRET], { now: () => PUBLISHED_TIME });
    expect(rotated.reverse(PUBLISHED_SRS0)).toBe('test@otherdomain.com');
    expect(rotated.reverse(SRS1_AT_FORWARDER2)).toBe(PUBLISHED_SRS0);
    const fresh = rotated.forward('test@otherdomain.com', 'example.com');
    expect(fresh).toBe(srsAt(PUBLISHED_TIME, 'n3w').forward('test@otherdomain.com', 'example.com'));
    expect(outcome(() => srs.reverse(fresh))).toBe('forged');
    expect(outcome(() => new SenderRewriting(['n3w', 'other'], { now: () => PUBLISHED_TIME }).reverse(PUBLISHED_SRS0))).toBe('forged');
    expect(() => new SenderRewriting([])).toThrow(/empty/);
  });

  it('gets its secrets from ENCRYPTION_KEY and ENCRYPTION_KEY_PREVIOUS as the forwarding module builds it', () => {
    const secrets = (env: Record<string, string>) => AppConfigService.fromEnv(env).derivedKeys('mailroom srs v1');
    const [oldKey, newKey, unknownKey] = ['a', 'b', 'c'].map((c) => c.repeat(64));
    const before = new SenderRewriting(secrets({ ENCRYPTION_KEY: oldKey }));
    const during = new SenderRewriting(secrets({ ENCRYPTION_KEY: newKey, ENCRYPTION_KEY_PREVIOUS: oldKey }));
    const after = new SenderRewriting(secrets({ ENCRYPTION_KEY: newKey }));
    const oldAddress = before.forward('ada@example.org', 'fwd.example');
    expect(during.reverse(oldAddress)).toBe('ada@example.org');
    expect(outcome(() => after.reverse(oldAddress))).toBe('forged');
    expect(after.reverse(during.forward('ada@example.org', 'fwd.example'))).toBe('ada@example.org');
    expect(outcome(() => before.reverse(during.forward('ada@example.org', 'fwd.example')))).toBe('forged');
    const unknown = new SenderRewriting(secrets({ ENCRYPTION_KEY: unknownKey })).forward('ada@example.org', 'fwd.example');
    expect(outcome(() => during.reverse(unknown))).toBe('forged');
  });

  it('accepts an SRS0 address for 21 days, then refuses it as expired, counting days modulo 1024', () => {
    expect(outcome(() => srsAt(PUBLISHED_TIME + 21 * DAY).reverse(SRS0))).toBe('test@otherdomain.com');
    expect(outcome(() => srsAt(PUBLISHED_TIME + 22 * DAY).reverse(SRS0))).toBe('expired');
    // A timestamp from the future is 1023 days old, as in libsrs2.
    expect(outcome(() => srsAt(PUBLISHED_TIME - DAY).reverse(SRS0))).toBe('expired');
    expect(outcome(() => new SenderRewriting(SECRET, { maxAgeDays: 3, now: () => PUBLISHED_TIME + 4 * DAY }).reverse(SRS0))).toBe(
      'expired',
    );

    const lastDayOfCycle = 1023 * DAY + 1024 * 18 * DAY;
    const srs0 = srsAt(lastDayOfCycle).forward('a@b.org', 'fwd.example');
    expect(srs0).toMatch(/^SRS0=[A-Z2-7]{8}=77=/);
    expect(outcome(() => srsAt(lastDayOfCycle + 5 * DAY).reverse(srs0))).toBe('a@b.org');
    expect(outcome(() => srsAt(lastDayOfCycle + 22 * DAY).reverse(srs0))).toBe('expired');
  });

  it('refuses addresses that are not SRS or are cut short as malformed', () => {
    for (const address of [
      '',
      'test@otherdomain.com',
      'SRS2=vmyz=2W=otherdomain.com=test@example.com',
      'SRS0vmyz=2W=otherdomain.com=test@example.com',
      'SRS0=vmyz=2W=otherdomain.com@example.com',
      'SRS0=vmyz=2W=otherdomain.com=@example.com',
      'SRS0=vmyz=2W==test@example.com',
      'SRS0=vmyz@example.com',
      'SRS0=@example.com',
      'SRS0=vmyz=2!=otherdomain.com=test@example.com',
      'SRS0=vmyz=2WA=otherdomain.com=test@example.com',
      'SRS1=JO9m=example.com@forwarder2.net',
      'SRS1==example.com==vmyz=2W=otherdomain.com=test@forwarder2.net',
    ]) {
      expect([address, outcome(() => srs.reverse(address))]).toEqual([address, 'malformed']);
    }
  });

  it('refuses to rewrite a sender without local part or domain, or a cut-short SRS1 sender', () => {
    for (const sender of ['foo', '@example.org', 'foo@', 'SRS1=abcd@first.net']) {
      expect([sender, outcome(() => srs.forward(sender, 'example.com'))]).toEqual([sender, 'malformed']);
    }
  });

  it('tells SRS local parts by their tag and separator, in any case', () => {
    for (const local of ['SRS0=x', 'srs0-x', 'SrS1+x', 'SRS1=']) expect([local, SenderRewriting.isSrs(local)]).toEqual([local, true]);
    for (const local of ['SRS0', 'SRS2=x', 'SRS0_x', 'xSRS0=x', 'test'])
      expect([local, SenderRewriting.isSrs(local)]).toEqual([local, false]);
  });

  it('reverses every address it forwards, through one and two forwarders, at any time', () => {
    fc.assert(
      fc.property(fc.emailAddress(), fc.integer({ min: 0, max: 4102444800000 }), (sender, time) => {
        fc.pre(!SenderRewriting.isSrs(sender) && !sender.endsWith('@fwd.example') && !sender.endsWith('@second.example'));
        const first = srsAt(time);
        const second = srsAt(time, 'second secret');
        const srs0 = first.forward(sender, 'fwd.example');
        const srs1 = second.forward(srs0, 'second.example');
        expect(first.reverse(srs0)).toBe(sender);
        expect(first.reverse(srs0.toLowerCase()).toLowerCase()).toBe(sender.toLowerCase());
        expect(second.reverse(srs1)).toBe(srs0);
      }),
    );
  });
});

/** An SRS0 address as earlier versions wrote it (libsrs2's 4-character base64 hash), stamped at `time`. */
function legacyAddress(secret: string, time: number, sender: string, domain: string): string {
  const day = Math.floor(time / DAY) % 1024;
  const stamp = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567'[day >> 5] + 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567'[day & 31];
  const [local, host] = sender.split('@');
  return `SRS0=${legacyHash(secret, [stamp, host, local])}=${stamp}=${host}=${local}@${domain}`;
}

function legacyHash(secret: string, parts: string[]): string {
  const hmac = createHmac('sha1', secret);
  for (const part of parts) hmac.update(part.toLowerCase());
  return hmac.digest('base64').slice(0, 4);
}
