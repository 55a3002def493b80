import { normalizeEmailAddress } from './email-address';

describe('normalizeEmailAddress', () => {
  it('trims and lower-cases the whole address', () => {
    expect(normalizeEmailAddress('  Ada.Lovelace@Example.COM\t')).toBe('ada.lovelace@example.com');
  });
});
