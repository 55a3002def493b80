import { aboveCeiling, ceilingOf, inferKeyType, normalizePermissions, PERMISSIONS } from './permissions';

describe('permissions', () => {
  describe('normalizePermissions', () => {
    it('expands the aliases of the spec’s vocabularies into canonical names', () => {
      expect(normalizePermissions(['forms:send'])).toEqual({ permissions: ['forms.send'] });
      expect(normalizePermissions(['forms'])).toEqual({ permissions: ['forms.send', 'forms.read', 'forms.write'] });
      expect(normalizePermissions(['domains', 'analytics'])).toEqual({
        permissions: ['domains.read', 'domains.write', 'analytics.read'],
      });
      expect(normalizePermissions(['email.send'])).toEqual({ permissions: ['email.send'] });
    });

    it('de-duplicates and returns the vocabulary’s order', () => {
      expect(normalizePermissions(['templates.read', 'email.send', 'email.send', 'forms:send'])).toEqual({
        permissions: ['email.send', 'forms.send', 'templates.read'],
      });
    });

    it('treats names of Object.prototype as unknown, not as aliases', () => {
      expect(normalizePermissions(['constructor', '__proto__', 'hasOwnProperty'])).toEqual({
        unknown: ['constructor', '__proto__', 'hasOwnProperty'],
      });
    });

    it('reports every unknown name', () => {
      expect(normalizePermissions(['email.send', 'email.delete', 'root'])).toEqual({ unknown: ['email.delete', 'root'] });
    });
  });

  describe('ceilings (D-7)', () => {
    const OPERATOR_PERMISSIONS = ['operator.queues', 'operator.queues.manage', 'operator.metrics'] as const;

    it('lets admin keys of the operator account hold everything', () => {
      expect(ceilingOf('admin', true)).toEqual(PERMISSIONS);
    });

    it('lets a tenant’s admin keys hold everything but the operator’s pages', () => {
      expect(ceilingOf('admin', false)).toEqual(PERMISSIONS.filter((p) => !p.startsWith('operator.')));
      expect(aboveCeiling('admin', ['billing.write', ...OPERATOR_PERMISSIONS], false)).toEqual(OPERATOR_PERMISSIONS);
      expect(aboveCeiling('admin', ['billing.write', ...OPERATOR_PERMISSIONS], true)).toEqual([]);
    });

    it('keeps the operator’s pages from usage and public keys, even the operator’s', () => {
      for (const isOperator of [true, false]) {
        expect(aboveCeiling('usage', [...OPERATOR_PERMISSIONS], isOperator)).toEqual(OPERATOR_PERMISSIONS);
        expect(aboveCeiling('public', ['operator.metrics'], isOperator)).toEqual(['operator.metrics']);
      }
    });

    it('keeps usage keys away from domains, keys, billing, settings, projects and collections', () => {
      const usage = ceilingOf('usage', false);
      expect(ceilingOf('usage', true)).toEqual(usage);
      for (const p of [
        'domains.read',
        'domains.write',
        'keys.manage',
        'billing.read',
        'billing.write',
        'settings.write',
        'projects.read',
        'collections.write',
      ] as const) {
        expect(usage).not.toContain(p);
      }
      for (const p of [
        'email.send',
        'forms.send',
        'templates.write',
        'lists.write',
        'suppression.write',
        'webhooks.write',
        'analytics.read',
      ] as const) {
        expect(usage).toContain(p);
      }
    });

    it('gives public keys forms.send only', () => {
      expect(ceilingOf('public', false)).toEqual(['forms.send']);
      expect(aboveCeiling('public', ['forms.send', 'email.send'], false)).toEqual(['email.send']);
    });
  });

  describe('inferKeyType (D-9)', () => {
    it('is usage unless a permission needs an admin key', () => {
      expect(inferKeyType(['email.send', 'templates.read'])).toBe('usage');
      expect(inferKeyType(['email.send', 'domains.write'])).toBe('admin');
      expect(inferKeyType(['keys.manage'])).toBe('admin');
      expect(inferKeyType(['operator.metrics'])).toBe('admin');
    });
  });
});
