import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_PLANS, PlanCatalog } from './plans';

describe('PlanCatalog', () => {
  let dir: string;
  beforeAll(() => (dir = mkdtempSync(join(tmpdir(), 'mailroom-plans-'))));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const write = (name: string, text: string) => {
    const file = join(dir, name);
    writeFileSync(file, text);
    return file;
  };
  const loadError = (file: string) => {
    try {
      PlanCatalog.load(file);
    } catch (err) {
      return (err as Error).message;
    }
    throw new Error('expected the file to be refused');
  };

  it('holds the D-32 plans without a file', () => {
    const catalog = PlanCatalog.load(undefined);
    expect(catalog.names).toEqual(['starter', 'developer', 'scale']);
    expect(catalog.get('starter')).toEqual({ name: 'starter', monthlyFeeCents: 1000, includedEmails: 10_000, overageCentsPer1000: 100 });
    expect(catalog.get('developer')).toEqual({
      name: 'developer',
      monthlyFeeCents: 2500,
      includedEmails: 50_000,
      overageCentsPer1000: 100,
    });
    expect(catalog.get('scale')).toEqual({ name: 'scale', monthlyFeeCents: 9000, includedEmails: 250_000, overageCentsPer1000: 100 });
    expect(catalog.get('free')).toBeUndefined();
    expect(catalog.plans).toBe(DEFAULT_PLANS);
  });

  it('replaces the catalog with a JSON file, amounts in cents, the file-wide overage rate as default', () => {
    const file = write(
      'plans.json',
      JSON.stringify({
        overagePer1000: 0.8,
        plans: [
          { name: 'hobby', monthlyFee: 4.99, includedEmails: 2000 },
          { name: 'team', monthlyFee: 49, includedEmails: 100_000, overagePer1000: 0.65 },
        ],
      }),
    );
    const catalog = PlanCatalog.load(file);
    expect(catalog.plans).toEqual([
      { name: 'hobby', monthlyFeeCents: 499, includedEmails: 2000, overageCentsPer1000: 80 },
      { name: 'team', monthlyFeeCents: 4900, includedEmails: 100_000, overageCentsPer1000: 65 },
    ]);
    expect(catalog.get('starter')).toBeUndefined();
  });

  it('reads YAML, with 1.00 per 1,000 when no rate is given', () => {
    const file = write('plans.yaml', ['plans:', '  - name: basic', '    monthlyFee: 12.50', '    includedEmails: 20000', ''].join('\n'));
    expect(PlanCatalog.load(file).plans).toEqual([
      { name: 'basic', monthlyFeeCents: 1250, includedEmails: 20_000, overageCentsPer1000: 100 },
    ]);
  });

  it('names the file and every bad field', () => {
    const file = write(
      'bad.yaml',
      [
        'plans:',
        '  - name: ok',
        '    monthlyFee: 10',
        '    includedEmails: 1000',
        '  - name: Bad Name',
        '    monthlyFee: -1',
        '    includedEmails: 1.5',
        '    includedEmail: 3',
        '',
      ].join('\n'),
    );
    const message = loadError(file);
    expect(message).toContain(`Invalid BILLING_PLANS_FILE ${file}:`);
    expect(message).toContain('plans[1].name: name must be 1-32 lower-case letters');
    expect(message).toContain('plans[1].monthlyFee: monthlyFee must not be less than 0');
    expect(message).toContain('plans[1].includedEmails: includedEmails must be an integer number');
    expect(message).toContain('plans[1].includedEmail: property includedEmail should not exist');
    expect(message).not.toContain('plans[0]');
  });

  it('refuses a fee with more than two decimals, a missing field, free, duplicate names and an empty list', () => {
    expect(loadError(write('cents.json', JSON.stringify({ plans: [{ name: 'a', monthlyFee: 1.005, includedEmails: 1 }] })))).toContain(
      'plans[0].monthlyFee: monthlyFee must be a number with at most 2 decimals',
    );
    expect(loadError(write('missing.json', JSON.stringify({ plans: [{ name: 'a', monthlyFee: 1 }] })))).toContain(
      'plans[0].includedEmails:',
    );
    expect(loadError(write('free.json', JSON.stringify({ plans: [{ name: 'free', monthlyFee: 0, includedEmails: 1 }] })))).toContain(
      'plans[0].name: name must not be free',
    );
    const twice = { name: 'a', monthlyFee: 1, includedEmails: 1 };
    expect(loadError(write('twice.json', JSON.stringify({ plans: [twice, twice] })))).toContain('plans: plans must have distinct names');
    expect(loadError(write('empty.json', JSON.stringify({ plans: [] })))).toContain('plans: plans must contain at least 1 elements');
  });

  it('says what is wrong with a file that is not a plans object or cannot be read', () => {
    expect(loadError(write('list.yaml', '- name: a\n'))).toBe(
      `Invalid BILLING_PLANS_FILE ${join(dir, 'list.yaml')}:\n  the file must hold an object with a plans list`,
    );
    expect(loadError(write('broken.json', '{"plans": ['))).toMatch(
      /^Invalid BILLING_PLANS_FILE .*broken\.json:\n {2}not valid JSON or YAML: /,
    );
    expect(loadError(join(dir, 'absent.yaml'))).toBe(`Invalid BILLING_PLANS_FILE ${join(dir, 'absent.yaml')}: cannot read it (ENOENT)`);
  });
});
