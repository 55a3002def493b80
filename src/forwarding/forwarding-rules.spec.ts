import { matchRule, splitAddress } from './forwarding-rules';

describe('matchRule', () => {
  const rules = { info: ['a@example.org'], sales: ['b@example.org', 'c@example.org'], '*': ['catch@example.org'] };

  it('takes the exact alias before the wildcard, case-insensitively', () => {
    expect(matchRule(rules, 'info')).toEqual({ rule: 'info', destinations: ['a@example.org'] });
    expect(matchRule(rules, 'SALES')).toEqual({ rule: 'sales', destinations: ['b@example.org', 'c@example.org'] });
  });

  it('takes the alias without its +tag, then the wildcard', () => {
    expect(matchRule(rules, 'info+news')).toEqual({ rule: 'info', destinations: ['a@example.org'] });
    expect(matchRule(rules, 'other+news')).toEqual({ rule: '*', destinations: ['catch@example.org'] });
    expect(matchRule(rules, 'nobody')).toEqual({ rule: '*', destinations: ['catch@example.org'] });
  });

  it('finds nothing without a matching alias or wildcard', () => {
    expect(matchRule({ info: ['a@example.org'] }, 'nobody')).toBeNull();
    expect(matchRule({ info: ['a@example.org'] }, '+info')).toBeNull();
    expect(matchRule(undefined, 'info')).toBeNull();
  });
});

describe('splitAddress', () => {
  it('splits at the last @ and lower-cases the domain only', () => {
    expect(splitAddress('Info@Example.COM')).toEqual({ local: 'Info', domain: 'example.com' });
    expect(splitAddress('"a@b"@example.com')).toEqual({ local: '"a@b"', domain: 'example.com' });
  });

  it('refuses an address without a local part or a domain', () => {
    expect(splitAddress('example.com')).toBeNull();
    expect(splitAddress('@example.com')).toBeNull();
    expect(splitAddress('info@')).toBeNull();
  });
});
