import { AppException } from '../common/errors/app.exception';
import { checkSubscribers, subscriberEntries } from './subscriber-entries';

function validationFields(call: () => unknown): { field: string; message: string }[] {
  try {
    call();
  } catch (err) {
    expect(err).toBeInstanceOf(AppException);
    return (err as AppException).details!.fields as { field: string; message: string }[];
  }
  throw new Error('did not throw');
}

describe('subscriberEntries', () => {
  it('takes the spec’s array and the {subscribers} object alike', () => {
    const entries = [{ email: 'ada@example.org' }];
    expect(subscriberEntries(entries)).toBe(entries);
    expect(subscriberEntries({ subscribers: entries })).toBe(entries);
  });

  it('refuses other shapes, other fields, none and more than 1000', () => {
    expect(validationFields(() => subscriberEntries('ada@example.org'))[0].field).toBe('subscribers');
    expect(validationFields(() => subscriberEntries(null))[0].field).toBe('subscribers');
    expect(validationFields(() => subscriberEntries({ subscribers: 'x' }))[0].field).toBe('subscribers');
    expect(validationFields(() => subscriberEntries({ subscribers: [], list: 'x' }))[0].field).toBe('list');
    expect(validationFields(() => subscriberEntries([]))[0].message).toContain('at least one');
    const many = Array.from({ length: 1001 }, (_, i) => ({ email: `s${i}@example.org` }));
    expect(validationFields(() => subscriberEntries(many))[0].message).toContain('at most 1000');
    expect(subscriberEntries(many.slice(0, 1000))).toHaveLength(1000);
  });
});

describe('checkSubscribers', () => {
  it('lower-cases, deduplicates keeping the first place and the last name given, and counts the repeats', () => {
    const { valid, invalid, repeats } = checkSubscribers([
      { email: 'Ada@Example.org', name: 'Ada' },
      { email: ' grace@example.org ' },
      { email: 'ADA@example.org', name: 'Ada Lovelace' },
      { email: 'ada@example.org' },
    ]);
    expect(invalid).toEqual([]);
    expect(valid).toEqual([{ email: 'ada@example.org', name: 'Ada Lovelace' }, { email: 'grace@example.org' }]);
    expect(repeats).toBe(2);
  });

  it('reports bad entries by index and field, keeping the good ones', () => {
    const { valid, invalid } = checkSubscribers([
      { email: 'ok@example.org' },
      { email: 'not an address' },
      'ada@example.org',
      { email: 'x@example.org', name: 'Evil\r\nBcc: all@example.org' },
      { email: `${'a'.repeat(320)}@example.org` },
      { email: 'y@example.org', role: 'admin' },
      { name: 'No address' },
      { email: 'z@example.org', name: 'n'.repeat(201) },
    ]);
    expect(valid).toEqual([{ email: 'ok@example.org' }]);
    expect(invalid.map(({ index, field }) => [index, field])).toEqual([
      [1, 'subscribers[1].email'],
      [2, 'subscribers[2]'],
      [3, 'subscribers[3].name'],
      [4, 'subscribers[4].email'],
      [5, 'subscribers[5].role'],
      [6, 'subscribers[6].email'],
      [7, 'subscribers[7].name'],
    ]);
    expect(invalid.every((entry) => entry.message.length > 0)).toBe(true);
  });
});
