import { InvalidatedCache } from './invalidated-cache';

/** A loader whose answer the test gives when it chooses, counting its calls. */
function controlledLoader<V>() {
  const resolvers: ((value: V) => void)[] = [];
  const loader = jest.fn(() => new Promise<V>((resolve) => resolvers.push(resolve)));
  return { loader, answer: (value: V) => resolvers.shift()!(value) };
}

describe('InvalidatedCache', () => {
  const HOUR = 3_600_000;

  it('loads a key once and answers it from the cache after', async () => {
    const cache = new InvalidatedCache<string, string[]>(HOUR);
    const loader = jest.fn(() => Promise.resolve(['a.test']));
    expect(await cache.load('acc', loader)).toEqual(['a.test']);
    expect(await cache.load('acc', loader)).toEqual(['a.test']);
    expect(loader).toHaveBeenCalledTimes(1);
  });

  it('loads again after the key is invalidated or the cache cleared', async () => {
    const cache = new InvalidatedCache<string, string[]>(HOUR);
    const loader = jest.fn(() => Promise.resolve(['a.test']));
    await cache.load('acc', loader);
    cache.invalidate('acc');
    await cache.load('acc', loader);
    cache.clear();
    await cache.load('acc', loader);
    expect(loader).toHaveBeenCalledTimes(3);
  });

  it('does not keep what a load in flight read when its key is invalidated before it finishes', async () => {
    const cache = new InvalidatedCache<string, string[]>(HOUR);
    const { loader, answer } = controlledLoader<string[]>();
    const inFlight = cache.load('acc', loader);
    cache.invalidate('acc');
    answer(['old.test']);
    // Its caller gets what it read; the next lookup reads again.
    expect(await inFlight).toEqual(['old.test']);
    const next = cache.load('acc', loader);
    answer(['new.test']);
    expect(await next).toEqual(['new.test']);
    expect(loader).toHaveBeenCalledTimes(2);
    expect(await cache.load('acc', loader)).toEqual(['new.test']);
    expect(loader).toHaveBeenCalledTimes(2);
  });

  it('does not keep a load in flight across a clear, and keeps one of another key across an invalidation', async () => {
    const cache = new InvalidatedCache<string, string>(HOUR);
    const { loader, answer } = controlledLoader<string>();
    const cleared = cache.load('acc', loader);
    cache.clear();
    answer('old');
    await cleared;
    const other = cache.load('other', loader);
    cache.invalidate('acc');
    answer('kept');
    await other;
    const fresh = jest.fn(() => Promise.resolve('fresh'));
    expect(await cache.load('acc', fresh)).toBe('fresh');
    expect(await cache.load('other', fresh)).toBe('kept');
    expect(fresh).toHaveBeenCalledTimes(1);
  });

  it('keeps only the values `keep` accepts', async () => {
    const cache = new InvalidatedCache<string, string | null>(HOUR);
    const loader = jest.fn((): Promise<string | null> => Promise.resolve(null));
    const isHit = (value: string | null) => value !== null;
    expect(await cache.load('acc', loader, isHit)).toBeNull();
    expect(await cache.load('acc', loader, isHit)).toBeNull();
    expect(loader).toHaveBeenCalledTimes(2);
  });
});
