import { SettingsChecker } from '../common/settings-checker';
import { checkForwarding, checkInboundFiltering } from './domain-settings';

describe('checkForwarding', () => {
  const forwarding = (value: unknown) => {
    const check = new SettingsChecker();
    return { rules: checkForwarding(value, 'forwarding', check), errors: check.errors };
  };

  it('lower-cases aliases, accepts * and one address or a list', () => {
    expect(forwarding({ Info: 'owner@example.net', '*': ['a@example.net', 'b@example.net', 'a@example.net'] })).toEqual({
      rules: { info: ['owner@example.net'], '*': ['a@example.net', 'b@example.net'] },
      errors: [],
    });
  });

  it('refuses bad aliases, duplicates after lower-casing and bad destinations', () => {
    const { rules, errors } = forwarding({
      'info@example.com': 'x@example.net',
      'sales team': 'x@example.net',
      Sales: 'x@example.net',
      sales: 'x@example.net',
      support: ['nobody'],
      empty: [],
    });
    expect(rules).toBeUndefined();
    expect(errors.map((e) => e.field)).toEqual([
      'forwarding.info@example.com',
      'forwarding.sales team',
      'forwarding.sales',
      'forwarding.support[0]',
      'forwarding.empty',
    ]);
  });
});

describe('checkInboundFiltering', () => {
  const filtering = (value: unknown) => {
    const check = new SettingsChecker();
    return { filtering: checkInboundFiltering(value, 'inboundFiltering', check), errors: check.errors };
  };

  it('fills what is left out with the defaults', () => {
    expect(filtering({})).toEqual({ filtering: { spamThreshold: 5, allowExecutableAttachments: false }, errors: [] });
    expect(filtering({ spamThreshold: 7.5, allowExecutableAttachments: true })).toEqual({
      filtering: { spamThreshold: 7.5, allowExecutableAttachments: true },
      errors: [],
    });
  });

  it('names each bad or unknown setting', () => {
    const { filtering: result, errors } = filtering({ spamThreshold: '5', allowExecutableAttachments: 1, virusScan: false });
    expect(result).toBeUndefined();
    expect(errors.map((e) => e.field).sort()).toEqual([
      'inboundFiltering.allowExecutableAttachments',
      'inboundFiltering.spamThreshold',
      'inboundFiltering.virusScan',
    ]);
    expect(filtering({ spamThreshold: 0.5 }).errors).toEqual([
      { field: 'inboundFiltering.spamThreshold', message: 'must be a number from 1 to 1000' },
    ]);
    expect(filtering({ spamThreshold: Number.NaN }).errors).toHaveLength(1);
    expect(filtering([]).errors).toEqual([{ field: 'inboundFiltering', message: 'must be an object' }]);
  });
});
