import { softBouncesSuppress } from './soft-bounces';

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
