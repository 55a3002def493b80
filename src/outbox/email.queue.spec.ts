import type { BackoffOptions, Job, JobOptions, Queue } from 'bull';
import type { AppConfigService } from '../config/app-config.service';
import { DeliverEmailJob, EmailQueue, EnqueueRequest } from './email.queue';
import { RetrySchedule } from './retry-schedule';

type Strategy = (attemptsMade: number, err: unknown, options: unknown) => number;

const FIRST_DELAY_MS = 10;
const schedule = new RetrySchedule(FIRST_DELAY_MS);
const NOW = Date.UTC(2030, 0, 1, 12);

/** The queue's producer over a fake Bull queue that keeps the jobs it is given. */
function emailQueue() {
  const added: { opts: JobOptions }[] = [];
  const queue = {
    settings: { backoffStrategies: {} as Record<string, Strategy> },
    addBulk: (jobs: { opts: JobOptions }[]) => Promise.resolve(added.push(...jobs)),
  };
  const config = { env: { EMAIL_RETRY_FIRST_DELAY_MS: FIRST_DELAY_MS } } as unknown as AppConfigService;
  const producer = new EmailQueue(queue as unknown as Queue<DeliverEmailJob>, config);
  /** The options of the job the sweeper adds for `request`. */
  const requeued = async (request: Omit<EnqueueRequest, 'messageId' | 'priority'>) => {
    await producer.requeue([{ messageId: 'msg_1', priority: 'normal', ...request }]);
    return added[added.length - 1].opts;
  };
  /** The delay before the job's next run after its `attemptsMade`-th failed, as Bull reckons it (lib/backoffs.js). */
  const backoffAfter = (opts: JobOptions, attemptsMade: number) => {
    const backoff = opts.backoff as BackoffOptions;
    return queue.settings.backoffStrategies[backoff.type](attemptsMade, new Error('451 try later'), backoff.options ?? null);
  };
  return { requeued, backoffAfter };
}

/** The job as Bull hands it to the processor after `attemptsMade` failed runs. */
const jobAfter = (opts: JobOptions, attemptsMade: number) => ({ opts, attemptsMade }) as Job<DeliverEmailJob>;

describe('EmailQueue', () => {
  beforeEach(() => jest.spyOn(Date, 'now').mockReturnValue(NOW));
  afterEach(() => jest.restoreAllMocks());

  it('gives a new message the whole schedule, its runs counted from the first attempt', async () => {
    const { requeued, backoffAfter } = emailQueue();
    const opts = await requeued({});
    expect(opts.attempts).toBe(schedule.maxAttempts);
    expect(opts.delay).toBeUndefined();
    expect([1, 2, 6].map((n) => backoffAfter(opts, n))).toEqual([schedule.delayAfter(1), schedule.delayAfter(2), schedule.delayAfter(6)]);
    expect(EmailQueue.attemptOf(jobAfter(opts, 0))).toBe(1);
    expect(EmailQueue.attemptOf(jobAfter(opts, 3))).toBe(4);
  });

  it('goes on with the schedule of a deferred message whose job was lost, from the attempts it had made', async () => {
    const { requeued, backoffAfter } = emailQueue();
    const opts = await requeued({ attemptsMade: 6, nextAttemptAt: new Date(NOW + 5000) });
    // Its job waits for the attempt it was due for, then makes the 23 left of the 29.
    expect(opts.delay).toBe(5000);
    expect(opts.attempts).toBe(schedule.maxAttempts - 6);
    // The job's first failed run is the message's 7th: the hourly step, not the first delay again.
    expect(backoffAfter(opts, 1)).toBe(schedule.delayAfter(7));
    expect(schedule.delayAfter(7)).not.toBe(schedule.delayAfter(1));
    expect(backoffAfter(opts, 2)).toBe(schedule.delayAfter(8));
    expect(EmailQueue.attemptOf(jobAfter(opts, 0))).toBe(7);
    expect(EmailQueue.attemptOf(jobAfter(opts, 22))).toBe(schedule.maxAttempts);
  });

  it('runs the job of a lost message whose next attempt is past at once, and gives it at least one attempt', async () => {
    const { requeued } = emailQueue();
    const opts = await requeued({ attemptsMade: schedule.maxAttempts, nextAttemptAt: new Date(NOW - 1000) });
    expect(opts.delay).toBeUndefined();
    expect(opts.attempts).toBe(1);
  });

  it('keeps the strategies other queues registered on the shared settings', () => {
    const queue = { settings: { backoffStrategies: { other: () => 1 } as Record<string, Strategy> } };
    new EmailQueue(queue as unknown as Queue<DeliverEmailJob>, { env: { EMAIL_RETRY_FIRST_DELAY_MS: 1 } } as unknown as AppConfigService);
    expect(Object.keys(queue.settings.backoffStrategies)).toHaveLength(2);
    expect(queue.settings.backoffStrategies.other(0, null, null)).toBe(1);
  });
});
