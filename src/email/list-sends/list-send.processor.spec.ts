import type { Job, Queue } from 'bull';
import type { AppConfigService } from '../../config/app-config.service';
import { FanOutInterrupted, ListSendFailed } from './list-send-attempts';
import { ListSendProcessor } from './list-send.processor';
import type { FanOutListSendJob } from './list-send.queue';
import type { ListSendsService } from './list-sends.service';

type Handler = (job: Job<FanOutListSendJob>) => Promise<void>;
type Run = (listSendId: string, stopping: () => boolean) => Promise<void>;

const RETRY_FIRST_DELAY_MS = 1000;

/** The processor, started over a fake queue: its handler as Bull calls it, each run doing what `run` does. */
function worker(run: Run) {
  let handler: Handler | undefined;
  const queue = {
    process: (_name: string, _concurrency: number, h: Handler) => {
      handler = h;
      return new Promise<void>(() => undefined);
    },
  };
  const config = { env: { LIST_SEND_RETRY_FIRST_DELAY_MS: RETRY_FIRST_DELAY_MS } } as unknown as AppConfigService;
  const processor = new ListSendProcessor(queue as unknown as Queue<FanOutListSendJob>, { run } as unknown as ListSendsService, config);
  processor.onApplicationBootstrap();
  return { processor, handle: handler! };
}

/** A job in its `attemptsMade + 1`-th run, as Bull holds it in memory. */
function jobAfter(attemptsMade: number) {
  return {
    data: { listSendId: 'lsnd_1' },
    attemptsMade,
    opts: { attempts: 10, backoff: { type: 'exponential', delay: RETRY_FIRST_DELAY_MS } },
    discard: jest.fn(),
  };
}

describe('ListSendProcessor', () => {
  it('tells a run the worker is stopping once it shuts down', async () => {
    const seen: boolean[] = [];
    const { processor, handle } = worker((_id, stopping) => {
      seen.push(stopping());
      return Promise.resolve();
    });
    await handle(jobAfter(0) as unknown as Job<FanOutListSendJob>);
    processor.beforeApplicationShutdown();
    await handle(jobAfter(0) as unknown as Job<FanOutListSendJob>);
    expect(seen).toEqual([false, true]);
  });

  it('uses up no attempt of the job for a run that shutdown interrupted, and retries it after the first delay', async () => {
    const { handle } = worker(() => Promise.reject(new FanOutInterrupted('the worker is shutting down')));
    const job = jobAfter(3);
    await expect(handle(job as unknown as Job<FanOutListSendJob>)).rejects.toBeInstanceOf(FanOutInterrupted);
    // Bull stores attemptsMade + 1 (3 again) and waits what the backoff says; the job stays live.
    expect(job.attemptsMade).toBe(2);
    expect(job.opts.backoff).toEqual({ type: 'fixed', delay: RETRY_FIRST_DELAY_MS });
    expect(job.discard).not.toHaveBeenCalled();
  });

  it('leaves a failed run counted, and sends the job of a failed send to the failed set at once', async () => {
    const failedRun = jobAfter(3);
    await expect(
      worker(() => Promise.reject(new Error('connection reset'))).handle(failedRun as unknown as Job<FanOutListSendJob>),
    ).rejects.toThrow('connection reset');
    expect(failedRun).toMatchObject({ attemptsMade: 3, opts: { backoff: { type: 'exponential' } } });
    expect(failedRun.discard).not.toHaveBeenCalled();

    const failedSend = jobAfter(3);
    await expect(
      worker(() => Promise.reject(new ListSendFailed('gave up'))).handle(failedSend as unknown as Job<FanOutListSendJob>),
    ).rejects.toBeInstanceOf(ListSendFailed);
    expect(failedSend.discard).toHaveBeenCalled();
    expect(failedSend.attemptsMade).toBe(3);
  });
});
