import { ReleaseSlots } from './release-slots';

describe('ReleaseSlots', () => {
  /** A piece of work that runs until `finish` is called. */
  function pending(log: string[], name: string) {
    let finish!: () => void;
    const gate = new Promise<void>((resolve) => (finish = resolve));
    const work = async () => {
      log.push(`start ${name}`);
      await gate;
      log.push(`end ${name}`);
      return name;
    };
    return { work, finish };
  }
  const turn = () => new Promise((resolve) => setImmediate(resolve));

  it('runs at most its size at once; the others wait, first come first served', async () => {
    const slots = new ReleaseSlots(2);
    const log: string[] = [];
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((name) => pending(log, name));
    const runs = [a, b, c, d].map((p) => slots.run(p.work));
    await turn();
    expect(log).toEqual(['start a', 'start b']);

    b.finish();
    await turn();
    expect(log).toEqual(['start a', 'start b', 'end b', 'start c']);

    a.finish();
    c.finish();
    d.finish();
    expect(await Promise.all(runs)).toEqual(['a', 'b', 'c', 'd']);
    expect(log.filter((line) => line.startsWith('start'))).toEqual(['start a', 'start b', 'start c', 'start d']);
  });

  it('frees the slot of work that throws', async () => {
    const slots = new ReleaseSlots(1);
    await expect(slots.run(() => Promise.reject(new Error('no')))).rejects.toThrow('no');
    await expect(slots.run(() => Promise.resolve('next'))).resolves.toBe('next');
  });
});
