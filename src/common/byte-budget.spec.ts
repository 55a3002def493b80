import { ByteBudget } from './byte-budget';

/** Whether the promise settled within the current turn of microtasks. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(() => (done = true));
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

describe('ByteBudget', () => {
  it('grants what fits at once and holds the rest until bytes are given back', async () => {
    const budget = new ByteBudget(100);
    const first = await budget.acquire(60);
    const second = budget.acquire(50);
    expect(await settled(second)).toBe(false);
    expect(budget.inUse).toBe(60);
    first();
    expect(await settled(second)).toBe(true);
    expect(budget.inUse).toBe(50);
  });

  it('lets a message heavier than the whole budget go alone, once nothing else is held', async () => {
    const budget = new ByteBudget(100);
    const small = await budget.acquire(10);
    const huge = budget.acquire(500);
    expect(await settled(huge)).toBe(false);
    small();
    const releaseHuge = await huge;
    expect(budget.inUse).toBe(500);
    const after = budget.acquire(1);
    expect(await settled(after)).toBe(false);
    releaseHuge();
    expect(await settled(after)).toBe(true);
  });

  it('serves waiters first come first served: a small one does not overtake a large one', async () => {
    const budget = new ByteBudget(100);
    const held = await budget.acquire(90);
    const large = budget.acquire(80);
    const small = budget.acquire(5);
    expect(await settled(small)).toBe(false);
    held();
    expect(await settled(large)).toBe(true);
    expect(await settled(small)).toBe(true);
    expect(budget.inUse).toBe(85);
  });

  it('tryAcquire takes what fits at once and refuses the rest without waiting', () => {
    const budget = new ByteBudget(100);
    const first = budget.tryAcquire(60);
    expect(first).not.toBeNull();
    expect(budget.tryAcquire(41)).toBeNull();
    expect(budget.inUse).toBe(60);
    expect(budget.tryAcquire(40)).not.toBeNull();
    expect(budget.inUse).toBe(100);
    first!();
    expect(budget.tryAcquire(60)).not.toBeNull();
    expect(new ByteBudget(100).tryAcquire(101)).toBeNull();
  });

  it('tryAcquire does not overtake a waiter', async () => {
    const budget = new ByteBudget(100);
    const held = await budget.acquire(90);
    const waiting = budget.acquire(50);
    expect(budget.tryAcquire(5)).toBeNull();
    held();
    expect(await settled(waiting)).toBe(true);
  });

  it('gives bytes back once however often release is called', async () => {
    const budget = new ByteBudget(100);
    const release = await budget.acquire(40);
    await budget.acquire(30);
    release();
    release();
    expect(budget.inUse).toBe(30);
  });
});
