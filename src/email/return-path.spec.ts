import fc from 'fast-check';
import { newId } from '../common/ids';
import { AppConfigService } from '../config/app-config.service';
import { ReturnPaths } from './return-path';

const config = (key: string, overrides: Record<string, string> = {}) =>
  AppConfigService.fromEnv({
    ENCRYPTION_KEY: key.repeat(64),
    PUBLIC_URL: 'https://mr.test/',
    RETURN_PATH_DOMAIN: 'Bounce.MR.test',
    ...overrides,
  });

describe('ReturnPaths', () => {
  const returnPaths = new ReturnPaths(config('a'));
  const messageId = newId('msg');
  const address = returnPaths.address(messageId);
  const [local] = address.split('@');

  it('gives each message a bounces+ address on RETURN_PATH_DOMAIN that names it, the same at every attempt', () => {
    expect(address).toMatch(/^bounces\+[a-z2-7]{36}-[a-z2-7]{13}@bounce\.mr\.test$/);
    expect(returnPaths.messageOf(address)).toBe(messageId);
    expect(returnPaths.address(messageId)).toBe(address);
    expect(returnPaths.address(newId('msg'))).not.toBe(address);
  });

  it('writes the id in RFC 4648 base32', () => {
    // RFC 4648 section 10: BASE32("foobar") = "MZXW6YTBOI".
    expect(returnPaths.address('msg_foobar')).toMatch(/^bounces\+mzxw6ytboi-[a-z2-7]{13}@/);
    expect(returnPaths.messageOf(returnPaths.address('msg_foobar'))).toBe('msg_foobar');
  });

  it('falls back to the PUBLIC_URL host when RETURN_PATH_DOMAIN is not set', () => {
    const fallback = new ReturnPaths(config('a', { RETURN_PATH_DOMAIN: '', PUBLIC_URL: 'https://Mail.Example.org' }));
    expect(fallback.address('msg_foobar')).toMatch(/@mail\.example\.org$/);
  });

  it('keeps the local part within the 64 characters SMTP allows', () => {
    expect(local.length).toBeLessThanOrEqual(64);
    expect(returnPaths.address(`msg_${'Z'.repeat(22)}`).split('@')[0].length).toBeLessThanOrEqual(64);
  });

  it('still knows the message when another MTA changed the case of the address', () => {
    expect(returnPaths.messageOf(address.toUpperCase())).toBe(messageId);
    expect(returnPaths.messageOf(`${local.toUpperCase()}@bounce.mr.test`)).toBe(messageId);
    expect(returnPaths.messageOf(`${local}@BOUNCE.mr.TEST`)).toBe(messageId);
  });

  it('knows no message for a tampered token or another key’s address', () => {
    const [prefix, token] = local.split('+');
    const [encodedId, mac] = token.split('-');
    const flip = (s: string, i: number) => s.slice(0, i) + (s[i] === 'a' ? 'b' : 'a') + s.slice(i + 1);
    expect(returnPaths.messageOf(`${prefix}+${encodedId}-${flip(mac, 5)}@bounce.mr.test`)).toBeNull();
    expect(returnPaths.messageOf(`${prefix}+${flip(encodedId, 3)}-${mac}@bounce.mr.test`)).toBeNull();
    const otherMessage = returnPaths.address(newId('msg')).split('@')[0].split('-')[0];
    expect(returnPaths.messageOf(`${otherMessage}-${mac}@bounce.mr.test`)).toBeNull();
    expect(returnPaths.messageOf(`${prefix}+${encodedId}-${mac.slice(1)}@bounce.mr.test`)).toBeNull();
    expect(returnPaths.messageOf(`${prefix}+${encodedId}-${mac}a@bounce.mr.test`)).toBeNull();
    expect(new ReturnPaths(config('b')).messageOf(address)).toBeNull();
  });

  it('still knows the message of an address made under a previous key, and makes new ones under the current key only', () => {
    const rotated = new ReturnPaths(config('b', { ENCRYPTION_KEY_PREVIOUS: 'a'.repeat(64) }));
    expect(rotated.messageOf(address)).toBe(messageId);
    expect(rotated.messageOf(address.toUpperCase())).toBe(messageId);
    const fresh = rotated.address(messageId);
    expect(fresh).toBe(new ReturnPaths(config('b')).address(messageId));
    expect(fresh).not.toBe(address);
    expect(returnPaths.messageOf(fresh)).toBeNull();
    expect(new ReturnPaths(config('b')).messageOf(address)).toBeNull();
    expect(new ReturnPaths(config('b', { ENCRYPTION_KEY_PREVIOUS: 'c'.repeat(64) })).messageOf(address)).toBeNull();
  });

  it('knows no message for an address on another domain', () => {
    for (const domain of ['mr.test', 'other.test', 'x.bounce.mr.test', 'bounce.mr.test.evil', '']) {
      expect([domain, returnPaths.messageOf(`${local}@${domain}`)]).toEqual([domain, null]);
    }
  });

  it('knows no message for another local part prefix', () => {
    const token = local.slice('bounces+'.length);
    for (const other of [`bounce+${token}`, `returns+${token}`, token, `bounces-${token}`, `xbounces+${token}`, `bounces++${token}`]) {
      expect([other, returnPaths.messageOf(`${other}@bounce.mr.test`)]).toEqual([other, null]);
    }
  });

  it('knows no message for garbage', () => {
    for (const garbage of [
      '',
      '@',
      'bounce.mr.test',
      '@bounce.mr.test',
      'bounces+@bounce.mr.test',
      'bounces+-@bounce.mr.test',
      'bounces+mzxw6ytboi@bounce.mr.test',
      'bounces+!!!!-aaaaaaaaaaaaa@bounce.mr.test',
      'bounces+mzxw6ytboi-aaaaaaaaaaaaa@bounce.mr.test',
      `bounces+${'a'.repeat(400)}@bounce.mr.test`,
      `${address}@bounce.mr.test`,
      'x'.repeat(10_000),
    ]) {
      expect([garbage.slice(0, 80), returnPaths.messageOf(garbage)]).toEqual([garbage.slice(0, 80), null]);
    }
  });

  it('refuses to make an address for something that is not a message id', () => {
    for (const bad of ['', 'msg_', 'acc_abc', `msg_${'a'.repeat(23)}`, 'msg_a-b']) expect(() => returnPaths.address(bad)).toThrow();
  });

  it('round-trips every message id, in any case, within 64 characters', () => {
    const base62Id = fc.stringMatching(/^[A-Za-z0-9]{1,22}$/).map((suffix) => `msg_${suffix}`);
    fc.assert(
      fc.property(base62Id, (id) => {
        const bounceAddress = returnPaths.address(id);
        expect(bounceAddress.split('@')[0].length).toBeLessThanOrEqual(64);
        expect(returnPaths.messageOf(bounceAddress)).toBe(id);
        expect(returnPaths.messageOf(bounceAddress.toUpperCase())).toBe(id);
      }),
    );
  });
});
