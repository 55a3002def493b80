import { billingSelfService, patchSettings } from './account-settings';

describe('patchSettings', () => {
  const settings = { limits: { requests_per_hour: 10, burst: 5 }, global_limits: { hourly: 3 }, other: { keep: true } };

  it('sets fields given a number, removes those given null, keeps the rest and other settings', () => {
    expect(patchSettings(settings, { limits: { requests_per_hour: 20, burst: null, requests_per_minute: undefined } })).toEqual({
      limits: { requests_per_hour: 20 },
      global_limits: { hourly: 3 },
      other: { keep: true },
    });
    expect(patchSettings(settings, { quotas: { emails_per_month: 7 } })).toMatchObject({ quotas: { emails_per_month: 7 } });
  });

  it('removes an object left without fields, or given null whole; leaves settings alone for undefined', () => {
    expect(patchSettings(settings, { global_limits: { hourly: null } })).toEqual({ limits: settings.limits, other: { keep: true } });
    expect(patchSettings(settings, { limits: null, quotas: undefined })).toEqual({ global_limits: { hourly: 3 }, other: { keep: true } });
    expect(patchSettings(settings, { global_limits: {} })).toEqual(settings);
  });

  it('does not change its input, and replaces a malformed object', () => {
    const input = { global_limits: [1, 2] as unknown };
    expect(patchSettings(input, { global_limits: { daily: 2 } })).toEqual({ global_limits: { daily: 2 } });
    expect(input).toEqual({ global_limits: [1, 2] });
    expect(patchSettings(settings, { limits: { burst: 1 } })).not.toBe(settings);
    expect(settings.limits).toEqual({ requests_per_hour: 10, burst: 5 });
  });
});

describe('billingSelfService', () => {
  it('is on only where the operator set settings.billing.self_service to true', () => {
    expect(billingSelfService({ billing: { self_service: true } })).toBe(true);
    for (const settings of [
      {},
      null,
      undefined,
      { billing: { self_service: false } },
      { billing: { self_service: 'true' } },
      { billing: true },
    ]) {
      expect(billingSelfService(settings as Record<string, unknown>)).toBe(false);
    }
  });
});
