import { inLockOrder, softBouncesSuppress } from './soft-bounces';

describe('softBouncesSuppress', () => {
  it('suppresses at the threshold, not before', () => {
    expect(softBouncesSuppress(4, 5)).toBe(false);
    expect(softBouncesSuppress(5, 5)).toBe(true);
    expect(softBouncesSuppress(6, 5)).toBe(true);
  });

  it('never suppresses when the threshold is 0', () => {
    expect(softBouncesSuppress(100, 0)).toBe(false);
  });

  it('suppresses at the first soft bounce when the threshold is 1', () => {
    expect(softBouncesSuppress(1, 1)).toBe(true);
  });
});

describe('inLockOrder', () => {
  it('orders by account, then normalized address, whatever order the events came in', () => {
    const a = { accountId: 'acc_1', email: 'Ann@Example.org', messageId: 'msg_1' };
    const b = { accountId: 'acc_1', email: 'bob@example.org', messageId: 'msg_2' };
    const c = { accountId: 'acc_0', email: 'zed@example.org', messageId: 'msg_3' };
    const expected = [
      { ...c, email: 'zed@example.org' },
      { ...a, email: 'ann@example.org' },
      { ...b, email: 'bob@example.org' },
    ];
    expect(inLockOrder([a, b, c])).toEqual(expected);
    expect(inLockOrder([b, c, a])).toEqual(expected);
  });
});
