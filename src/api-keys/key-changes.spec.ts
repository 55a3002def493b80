import { patchRestrictions } from './key-changes';

describe('patchRestrictions', () => {
  const restrictions = { ip_whitelist: ['10.0.0.0/8'], burst_limit: 30, expires_at: '2030-01-01T00:00:00Z' };

  it('sets fields given a value, removes those given null, keeps those left out', () => {
    expect(patchRestrictions(restrictions, { burst_limit: 10, expires_at: null, rate_limit: 50, exempt: undefined })).toEqual({
      ip_whitelist: ['10.0.0.0/8'],
      burst_limit: 10,
      rate_limit: 50,
    });
    expect(patchRestrictions(restrictions, {})).toEqual(restrictions);
  });

  it('replaces a list whole, and removes every restriction for a null patch', () => {
    expect(patchRestrictions(restrictions, { ip_whitelist: ['10.1.0.0/16'] }).ip_whitelist).toEqual(['10.1.0.0/16']);
    expect(patchRestrictions(restrictions, null)).toEqual({});
  });

  it('does not change its input', () => {
    patchRestrictions(restrictions, { burst_limit: null });
    expect(restrictions.burst_limit).toBe(30);
  });
});
