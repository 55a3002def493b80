import type { KeyRestrictions } from '../auth/auth-context';
import type { Permission } from '../auth/permissions';
import { CreatorKey, inheritRestrictions, KeyGrant, rangeWithin, widerThan } from './key-privileges';

const creator = (
  restrictions: KeyRestrictions = {},
  permissions: Permission[] = ['email.send', 'keys.manage'],
  rateLimit: number | null = 1000,
): CreatorKey => ({
  permissions,
  rateLimit,
  restrictions,
});
const grant = (restrictions: KeyRestrictions = {}, more: Partial<KeyGrant> = {}): KeyGrant => ({
  permissions: ['email.send'],
  rateLimit: 1000,
  domainScope: null,
  restrictions,
  ...more,
});
const fields = (wider: { field: string }[]) => wider.map((w) => w.field);

describe('key privileges: a key never creates a wider key', () => {
  describe('rangeWithin (CIDR containment)', () => {
    it('contains addresses and narrower ranges of the same family', () => {
      expect(rangeWithin('10.1.2.3', ['10.0.0.0/8'])).toBe(true);
      expect(rangeWithin('10.1.0.0/16', ['10.0.0.0/8'])).toBe(true);
      expect(rangeWithin('10.0.0.0/8', ['10.0.0.0/8'])).toBe(true);
      expect(rangeWithin('2001:db8:1::/48', ['2001:db8::/32'])).toBe(true);
      expect(rangeWithin('2001:db8::5', ['203.0.113.0/24', '2001:db8::/32'])).toBe(true);
    });

    it('refuses wider ranges, neighbours and the other family', () => {
      expect(rangeWithin('10.0.0.0/7', ['10.0.0.0/8'])).toBe(false);
      expect(rangeWithin('0.0.0.0/0', ['10.0.0.0/8'])).toBe(false);
      expect(rangeWithin('11.0.0.1', ['10.0.0.0/8'])).toBe(false);
      expect(rangeWithin('::/0', ['2001:db8::/32'])).toBe(false);
      expect(rangeWithin('::ffff:10.0.0.1', ['10.0.0.0/8'])).toBe(false);
      expect(rangeWithin('10.0.0.1', ['::ffff:0:0/96'])).toBe(false);
    });
  });

  describe('widerThan', () => {
    it('finds nothing when the grant stays within every bound', () => {
      const narrow = creator({
        ip_whitelist: ['10.0.0.0/8'],
        domain_restrictions: ['example.com'],
        expires_at: '2030-01-01T00:00:00Z',
        burst_limit: 30,
      });
      const within = grant({
        ip_whitelist: ['10.1.0.0/16'],
        domain_restrictions: ['mail.example.com'],
        expires_at: '2029-01-01T00:00:00Z',
        burst_limit: 10,
      });
      expect(widerThan(narrow, within)).toEqual([]);
    });

    it('names permissions the creator lacks', () => {
      const wider = widerThan(creator(), grant({}, { permissions: ['email.send', 'domains.write', 'billing.read'] }));
      expect(wider).toEqual([{ field: 'permissions', message: 'the creating key does not hold domains.write, billing.read' }]);
    });

    it('refuses IP ranges outside the creator’s allowlist, and none at all', () => {
      const limited = creator({ ip_whitelist: ['10.0.0.0/8', '2001:db8::/32'] });
      expect(widerThan(limited, grant({ ip_whitelist: ['10.0.0.0/7', '10.2.0.0/16'] }))[0]).toEqual({
        field: 'restrictions.ip_whitelist',
        message: "10.0.0.0/7 not within the creating key's ip_whitelist (10.0.0.0/8, 2001:db8::/32)",
      });
      expect(fields(widerThan(limited, grant({ ip_whitelist: [] })))).toEqual(['restrictions.ip_whitelist']);
      expect(fields(widerThan(limited, grant({})))).toEqual(['restrictions.ip_whitelist']);
    });

    it('refuses domains outside the creator’s, and a public key scoped elsewhere', () => {
      const limited = creator({ domain_restrictions: ['example.com'] });
      expect(fields(widerThan(limited, grant({ domain_restrictions: ['example.com.evil.net'] })))).toEqual([
        'restrictions.domain_restrictions',
      ]);
      expect(fields(widerThan(limited, grant({ domain_restrictions: ['com'] })))).toEqual(['restrictions.domain_restrictions']);
      expect(fields(widerThan(limited, grant({ domain_restrictions: ['example.com'] }, { domainScope: 'other.org' })))).toEqual([
        'domainScope',
      ]);
      expect(widerThan(limited, grant({ domain_restrictions: ['shop.example.com'] }, { domainScope: 'shop.example.com' }))).toEqual([]);
    });

    it('refuses a later expiry, or none, when the creator expires', () => {
      const expiring = creator({ expires_at: '2030-01-01T00:00:00Z' });
      expect(widerThan(expiring, grant({ expires_at: '2030-01-01T00:00:01Z' }))[0].message).toBe(
        "2030-01-01T00:00:01Z is later than the creating key's expiry 2030-01-01T00:00:00.000Z",
      );
      expect(fields(widerThan(expiring, grant({})))).toEqual(['restrictions.expires_at']);
      expect(widerThan(creator(), grant({ expires_at: '2099-01-01T00:00:00Z' }))).toEqual([]);
    });

    it('compares the limits as they apply: rate_limit, burst_limit, rateLimit and multiplier together', () => {
      const held = creator({ rate_limit: 500, burst_limit: 20 });
      expect(widerThan(held, grant({ rate_limit: 600, burst_limit: 20 }))).toEqual([
        { field: 'restrictions.rate_limit', message: "an hourly limit of 600 is above the creating key's 500" },
      ]);
      expect(fields(widerThan(held, grant({ burst_limit: 21 }, { rateLimit: 400 })))).toEqual(['restrictions.burst_limit']);
      expect(fields(widerThan(held, grant({ burst_limit: 20 }, { rateLimit: 501 })))).toEqual(['rateLimit']);
      expect(widerThan(held, grant({ burst_limit: 15, multiplier: 2 }, { rateLimit: 200 }))[0]).toEqual({
        field: 'restrictions.burst_limit',
        message: "a per-minute limit of 30 (with multiplier 2) is above the creating key's 20",
      });
      // A creator with a multiplier above 1 may hand out what it is allowed itself.
      expect(widerThan(creator({ multiplier: 2 }), grant({}, { rateLimit: 2000 }))).toEqual([]);
      // A creator without a per-minute limit bounds none.
      expect(widerThan(creator(), grant({ burst_limit: 1_000_000 }))).toEqual([]);
      // Asking for no per-minute limit where the creator has one is wider.
      expect(fields(widerThan(held, grant({ burst_limit: null as unknown as number }, { rateLimit: 100 })))).toEqual([
        'restrictions.burst_limit',
      ]);
    });

    it('lets a creator without an hourly limit grant any, or none; one with a limit refuses none', () => {
      const unbounded = creator({}, undefined, null);
      expect(widerThan(unbounded, grant({}, { rateLimit: 50_000 }))).toEqual([]);
      expect(widerThan(unbounded, grant({ rate_limit: 100_000_000 }))).toEqual([]);
      expect(widerThan(unbounded, grant({}, { rateLimit: null }))).toEqual([]);
      expect(widerThan(creator(), grant({}, { rateLimit: null }))).toEqual([
        { field: 'rateLimit', message: 'the creating key has an hourly limit of 1000' },
      ]);
      // Its own rate_limit bounds it all the same.
      expect(fields(widerThan(creator({ rate_limit: 500 }, undefined, null), grant({}, { rateLimit: 501 })))).toEqual(['rateLimit']);
      // The same key, unchanged, is within itself (PATCH of a key by itself).
      const narrow = creator({ ip_whitelist: ['10.0.0.0/8'], expires_at: '2030-01-01T00:00:00Z', burst_limit: 5 }, ['keys.manage'], 700);
      expect(widerThan(narrow, { ...narrow, domainScope: null })).toEqual([]);
    });

    it('refuses exempt unless the creator is exempt', () => {
      expect(widerThan(creator(), grant({ exempt: true }))).toEqual([
        { field: 'restrictions.exempt', message: 'the creating key is not exempt from its own limits' },
      ]);
      expect(widerThan(creator({ exempt: true }), grant({ exempt: true }, { rateLimit: 100_000 }))).toEqual([]);
    });
  });

  describe('inheritRestrictions', () => {
    const narrow = creator({
      ip_whitelist: ['10.0.0.0/8'],
      domain_restrictions: ['example.com'],
      expires_at: '2030-01-01T00:00:00Z',
      burst_limit: 30,
      multiplier: 0.5,
    });

    it('copies what the request leaves out, with the creator’s limits as they apply to it', () => {
      expect(inheritRestrictions(narrow, { restrictions: {} }, 1000)).toEqual({
        rateLimit: 500,
        restrictions: {
          ip_whitelist: ['10.0.0.0/8'],
          domain_restrictions: ['example.com'],
          expires_at: '2030-01-01T00:00:00Z',
          burst_limit: 15,
        },
      });
    });

    it('keeps what the request says, and the type’s default hourly limit when the creator allows more', () => {
      const asked = { rateLimit: 100, restrictions: { ip_whitelist: ['10.0.0.1'], burst_limit: 5 } };
      expect(inheritRestrictions(narrow, asked, 1000)).toEqual({
        rateLimit: 100,
        restrictions: {
          ip_whitelist: ['10.0.0.1'],
          domain_restrictions: ['example.com'],
          expires_at: '2030-01-01T00:00:00Z',
          burst_limit: 5,
        },
      });
      expect(inheritRestrictions(creator({}, [], 5000), { restrictions: {} }, 100)).toEqual({ rateLimit: 100, restrictions: {} });
      expect(inheritRestrictions(creator({ rate_limit: 50 }), { restrictions: { rate_limit: 40 } }, 1000)).toEqual({
        rateLimit: 1000,
        restrictions: { rate_limit: 40 },
      });
    });

    it('gives the type’s default hourly limit under a creator without one, and what the request says, null included', () => {
      const unbounded = creator({}, [], null);
      expect(inheritRestrictions(unbounded, { restrictions: {} }, 100)).toEqual({ rateLimit: 100, restrictions: {} });
      expect(inheritRestrictions(unbounded, { rateLimit: 50_000, restrictions: {} }, 1000)).toEqual({
        rateLimit: 50_000,
        restrictions: {},
      });
      expect(inheritRestrictions(unbounded, { rateLimit: null, restrictions: {} }, 1000)).toEqual({ rateLimit: null, restrictions: {} });
      // A creator with a limit still hands it down when the request says nothing.
      expect(inheritRestrictions(creator({}, [], 300), { restrictions: {} }, 1000).rateLimit).toBe(300);
    });

    it('makes a grant the creator allows: a narrow key makes narrow keys without restating everything', () => {
      const inherited = inheritRestrictions(narrow, { restrictions: {} }, 1000);
      expect(widerThan(narrow, grant(inherited.restrictions, { rateLimit: inherited.rateLimit }))).toEqual([]);
    });
  });
});
