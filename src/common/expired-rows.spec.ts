import { registry } from '../metrics/metrics';
import { sweepInBatches } from './expired-rows';

async function swept(kind: string): Promise<number> {
  const metric = await registry.getSingleMetric('mailroom_retention_swept_total')!.get();
  return metric.values.find((v) => v.labels.kind === kind)?.value ?? 0;
}

describe('sweepInBatches', () => {
  it('runs batches until one finds nothing (a short batch may leave rows behind) and counts them', async () => {
    const batches = [500, 120, 500, 0];
    const sizes: number[] = [];
    const total = await sweepInBatches({ kind: 'test_rows', size: 500 }, (size) => {
      sizes.push(size);
      return Promise.resolve(batches.shift()!);
    });
    expect(total).toBe(1120);
    expect(sizes).toEqual([500, 500, 500, 500]);
    expect(await swept('test_rows')).toBe(1120);
  });

  it('stops after maxBatches: the rest waits for the next run', async () => {
    let calls = 0;
    const total = await sweepInBatches({ kind: 'capped_rows', size: 10, maxBatches: 3 }, () => {
      calls++;
      return Promise.resolve(10);
    });
    expect([calls, total]).toEqual([3, 30]);
  });
});
