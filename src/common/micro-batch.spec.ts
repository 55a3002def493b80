import { allFulfilled, MicroBatch } from './micro-batch';

describe('MicroBatch', () => {
  it('runs the calls of one turn together, in call order, each getting its own outcome', async () => {
    const batches: number[][] = [];
    const batch = new MicroBatch<number, number>(
      (inputs) => {
        batches.push(inputs);
        return Promise.resolve(
          inputs.map((n): PromiseSettledResult<number> =>
            n < 0 ? { status: 'rejected', reason: new Error(`bad ${n}`) } : { status: 'fulfilled', value: n * 2 },
          ),
        );
      },
      10,
      1,
    );
    const results = await Promise.allSettled([batch.submit(1), batch.submit(-2), batch.submit(3)]);
    expect(batches).toEqual([[1, -2, 3]]);
    expect(results).toEqual([
      { status: 'fulfilled', value: 2 },
      { status: 'rejected', reason: new Error('bad -2') },
      { status: 'fulfilled', value: 6 },
    ]);
  });

  it('keeps calls made while a batch runs for the next one, and splits at maxBatch', async () => {
    const batches: number[][] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const batch = new MicroBatch<number, number>(
      async (inputs) => {
        batches.push(inputs);
        if (batches.length === 1) await gate;
        return allFulfilled(inputs);
      },
      2,
      1,
    );
    const first = batch.submit(1);
    await new Promise((resolve) => setImmediate(resolve));
    const later = [batch.submit(2), batch.submit(3), batch.submit(4)];
    await new Promise((resolve) => setImmediate(resolve));
    expect(batches).toEqual([[1]]);
    release();
    await Promise.all([first, ...later]);
    expect(batches).toEqual([[1], [2, 3], [4]]);
  });

  it('rejects every call of a batch whose run fails as a whole', async () => {
    const batch = new MicroBatch<number, number>(() => Promise.reject(new Error('database down')), 10, 1);
    const results = await Promise.allSettled([batch.submit(1), batch.submit(2)]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
  });

  it('closes a batch at the weight cap, and runs an input heavier than the cap alone', async () => {
    const batches: number[][] = [];
    const batch = new MicroBatch<number, number>(
      (inputs) => {
        batches.push(inputs);
        return Promise.resolve(allFulfilled(inputs));
      },
      10,
      1,
      { weigh: (n) => n, max: 10 },
    );
    await Promise.all([4, 5, 2, 30, 1, 9].map((n) => batch.submit(n)));
    expect(batches).toEqual([[4, 5], [2], [30], [1, 9]]);
  });
});
