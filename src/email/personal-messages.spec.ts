import { recipientVariables } from './personal-messages';

describe('recipientVariables', () => {
  it('keeps a name the recipient’s own variables give when no top-level name is given', () => {
    expect({ ...recipientVariables({}, { email: 'ann@example.org' }, { name: 'Ann' }) }).toEqual({ name: 'Ann', email: 'ann@example.org' });
  });

  it('lets the recipient’s own variables win over its email and name', () => {
    const variables = recipientVariables({}, { email: 'ann@example.org', name: 'Ann Smith' }, { name: 'Ann', email: 'shown@example.org' });
    expect({ ...variables }).toEqual({ name: 'Ann', email: 'shown@example.org' });
  });

  it('fills in email and name the recipient’s variables leave out; a name given nowhere is empty', () => {
    expect({ ...recipientVariables({}, { email: 'ann@example.org', name: 'Ann' }, { plan: 'Pro' }) }).toEqual({
      name: 'Ann',
      email: 'ann@example.org',
      plan: 'Pro',
    });
    expect({ ...recipientVariables(undefined, { email: 'ann@example.org', name: null }) }).toEqual({ name: '', email: 'ann@example.org' });
  });

  it('puts the send’s shared variables under the recipient’s email and name, and a shared name over a missing one', () => {
    const shared = { name: 'Friend', email: 'shared@example.org', greeting: 'Hello' };
    expect({ ...recipientVariables(shared, { email: 'ann@example.org', name: 'Ann' }) }).toEqual({
      name: 'Ann',
      email: 'ann@example.org',
      greeting: 'Hello',
    });
    expect(recipientVariables(shared, { email: 'bob@example.org' }).name).toBe('Friend');
  });

  it('keeps constructor, toString and __proto__ as plain values', () => {
    const own = JSON.parse('{"constructor":"x","toString":"y","__proto__":"z"}') as Record<string, unknown>;
    const variables = recipientVariables({}, { email: 'ann@example.org' }, own);
    expect(Object.entries(variables)).toEqual([
      ['name', ''],
      ['email', 'ann@example.org'],
      ['constructor', 'x'],
      ['toString', 'y'],
      ['__proto__', 'z'],
    ]);
    expect(Object.getPrototypeOf(variables)).toBeNull();
  });
});
