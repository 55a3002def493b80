import { SettingsChecker } from '../../common/settings-checker';
import { checkAllowlist, senderAllowed } from './sender-allowlist';

describe('checkAllowlist', () => {
  it('keeps addresses and @domains, lower-case, IDN domains in ASCII, each once', () => {
    const check = new SettingsChecker();
    const list = checkAllowlist([' Ada@Example.org ', '@Partner.Example', '@bücher.example', 'ada@example.org'], 'allowlist', check);
    expect(check.errors).toEqual([]);
    expect(list).toEqual(['ada@example.org', '@partner.example', '@xn--bcher-kva.example']);
  });

  it('names each entry that is neither', () => {
    const check = new SettingsChecker();
    expect(checkAllowlist(['ok@example.org', 'partner.example', '@', '@localhost', 3], 'allowlist', check)).toBeUndefined();
    expect(check.errors.map((e) => e.field)).toEqual(['allowlist[1]', 'allowlist[2]', 'allowlist[3]', 'allowlist[4]']);
  });

  it('refuses what is not a list', () => {
    const check = new SettingsChecker();
    expect(checkAllowlist('ada@example.org', 'allowlist', check)).toBeUndefined();
    expect(check.errors).toHaveLength(1);
  });
});

describe('senderAllowed', () => {
  const allowlist = ['ada@example.org', '@partner.example'];

  it('matches the address whatever its case, and any address of an allowed domain', () => {
    expect(senderAllowed(allowlist, 'ADA@example.org')).toBe(true);
    expect(senderAllowed(allowlist, ' ada@EXAMPLE.org ')).toBe(true);
    expect(senderAllowed(allowlist, 'bob@partner.example')).toBe(true);
  });

  it('does not match other addresses, subdomains, look-alikes or no address', () => {
    expect(senderAllowed(allowlist, 'eve@example.org')).toBe(false);
    expect(senderAllowed(allowlist, 'bob@mail.partner.example')).toBe(false);
    expect(senderAllowed(allowlist, 'bob@partner.example.evil.test')).toBe(false);
    expect(senderAllowed(allowlist, 'ada@example.org, eve@evil.test')).toBe(false);
    expect(senderAllowed(allowlist, undefined)).toBe(false);
    expect(senderAllowed(undefined, 'ada@example.org')).toBe(false);
  });
});
