import { slugify } from './slug';

describe('slugify', () => {
  it('makes a lower-case, hyphenated slug', () => {
    expect(slugify('My Site (2026)')).toBe('my-site-2026');
    expect(slugify('  Café Crème  ')).toBe('cafe-creme');
    expect(slugify('a'.repeat(70))).toHaveLength(63);
  });

  it('is empty when nothing usable is left', () => {
    expect(slugify('!!! ???')).toBe('');
  });
});
