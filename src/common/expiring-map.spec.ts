import { ExpiringMap } from './expiring-map';

describe('ExpiringMap', () => {
  afterEach(() => jest.useRealTimers());

  it('forgets an entry once its time is up', () => {
    jest.useFakeTimers({ now: 1_000 });
    const map = new ExpiringMap<string, number>(500);
    map.set('a', 1);
    jest.setSystemTime(1_499);
    expect(map.get('a')).toBe(1);
    jest.setSystemTime(1_500);
    expect(map.get('a')).toBeUndefined();
  });

  it('starts again empty past its size', () => {
    const map = new ExpiringMap<string, number>(60_000, 2);
    map.set('a', 1);
    map.set('b', 2);
    map.set('c', 3);
    expect([map.get('a'), map.get('b'), map.get('c')]).toEqual([undefined, undefined, 3]);
  });
});
