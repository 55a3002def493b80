import { SettingsChecker } from '../common/settings-checker';
import { checkForwarding } from './domain-settings';

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
