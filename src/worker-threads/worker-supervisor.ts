import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown, Optional } from '@nestjs/common';
import { Worker } from 'node:worker_threads';
import { AppConfigService } from '../config/app-config.service';
import type { MetricObjectWithValues, MetricValue } from 'prom-client';
import type { FromWorker, ToWorker } from './worker-messages';

/** A worker that lived shorter than this is restarted after a growing delay (a crash loop is not a busy loop). */
const STABLE_AFTER_MS = 10_000;
const FIRST_RESTART_DELAY_MS = 500;
const MAX_RESTART_DELAY_MS = 30_000;
/** A worker thread that does not answer a metrics request within this long is left out of the scrape. */
const METRICS_TIMEOUT_MS = 2_000;
/** How long past SHUTDOWN_TIMEOUT_MS a worker may take to stop before it is terminated. */
const EXIT_GRACE_MS = 5_000;
/**
 * V8's heap sizes per worker thread, as `npm start` sets them for the main thread (--max-old-space-size=512). The
 * old generation's size is a ceiling (a 40 MB message still fits) and the growth factor V8 derives from it: with
 * the default 4 GB a worker's heap grew to three times its live objects (about 190 MB) between collections while
 * delivering, with 512 MB it stays near 90 MB at the same speed. A delivery's objects die young, but with an 8 MB
 * young generation too many lived long enough to be promoted, and V8's collector threads spent 0.5 ms per email
 * on the old generation (two threads on two cores: 820–860 emails/s with 8 MB, 966–1,005 with 32 MB). No V8 flag
 * may set the semi-space size for the process: V8's flags override `resourceLimits` in every thread.
 */
const WORKER_OLD_GENERATION_MB = 512;
const WORKER_YOUNG_GENERATION_MB = 32;

/** The module a worker thread runs: it exports `runWorkerThread()` (src/worker.ts; a fixture in tests). */
export const WORKER_THREAD_MODULE = Symbol('WORKER_THREAD_MODULE');

interface RunningWorker {
  worker: Worker;
  startedAt: number;
}

/**
 * `APP_ROLE=all` with WORKER_PROCESSES > 0 (the default: one per core but one): this process serves HTTP on its main
 * thread and runs the queue workers (delivery, webhooks, inbound SMTP) in that many worker threads, each its own
 * Nest application context on its own event loop. Threads rather than forked processes: they share the process's
 * code and native memory (about 50 MB each process would hold again). A worker that dies is started again; on
 * shutdown each drains as a lone worker process does on SIGTERM.
 */
@Injectable()
export class WorkerSupervisor implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(WorkerSupervisor.name);
  private readonly workers = new Map<number, RunningWorker>();
  /** Per slot: the delay before its last restart. */
  private readonly restartDelays = new Map<number, number>();
  private stopping = false;
  private nextRequestId = 0;

  constructor(
    private readonly config: AppConfigService,
    @Optional() @Inject(WORKER_THREAD_MODULE) private readonly entry: string = require.resolve('../worker'),
  ) {}

  /** How many worker threads run now. */
  get running(): number {
    return this.workers.size;
  }

  onApplicationBootstrap(): void {
    const { workerThreads } = this.config.connectionShares;
    for (let slot = 0; slot < workerThreads; slot++) this.start(slot);
    this.logger.log(`Started ${workerThreads} worker threads`);
  }

  /** Graceful shutdown (GracefulShutdown): each worker drains as on `signal`, and is terminated past the bound. */
  async stop(signal: string): Promise<void> {
    this.stopping = true;
    const bound = this.config.env.SHUTDOWN_TIMEOUT_MS + EXIT_GRACE_MS;
    await Promise.all([...this.workers.values()].map(({ worker }) => stop(worker, signal, bound)));
  }

  /** Each running worker thread's metrics (prom-client JSON), for the main thread's /metrics to add up. */
  async collectMetrics(): Promise<MetricObjectWithValues<MetricValue<string>>[][]> {
    const answers = await Promise.all([...this.workers.values()].map(({ worker }) => this.requestMetrics(worker)));
    return answers.filter((metrics) => metrics !== null);
  }

  private requestMetrics(worker: Worker): Promise<MetricObjectWithValues<MetricValue<string>>[] | null> {
    const id = this.nextRequestId++;
    return new Promise((resolve) => {
      const done = (metrics: MetricObjectWithValues<MetricValue<string>>[] | null) => {
        clearTimeout(timer);
        worker.off('message', onMessage);
        worker.off('exit', onExit);
        resolve(metrics);
      };
      const onMessage = (message: FromWorker) => message.type === 'metrics' && message.id === id && done(message.metrics);
      const onExit = () => done(null);
      const timer = setTimeout(() => done(null), METRICS_TIMEOUT_MS);
      worker.on('message', onMessage);
      worker.once('exit', onExit);
      worker.postMessage({ type: 'metrics', id } satisfies ToWorker);
    });
  }

  /** app.close() without a signal (tests), or what is left after stop(): nothing is waited for. */
  async onApplicationShutdown(): Promise<void> {
    this.stopping = true;
    await Promise.all([...this.workers.values()].map(({ worker }) => worker.terminate()));
  }

  /**
   * The slot's worker thread: the worker entry point (src/worker.ts) with APP_ROLE=worker and the slot's share of the
   * process's connection budgets as its own; migrations and probes are the main thread's, and only the first slot
   * listens for inbound SMTP (threads cannot share a port).
   */
  private start(slot: number): void {
    const share = this.config.connectionShares.workers[slot];
    const env: Record<string, string | undefined> = {
      ...process.env,
      APP_ROLE: 'worker',
      WORKER_PORT: '0',
      MIGRATIONS_RUN: 'false',
      DATABASE_POOL_SIZE: String(share.database),
      SMTP_POOL_SIZE: String(share.smtp),
    };
    if (slot > 0) env.INBOUND_SMTP_PORT = '0';
    // `require` rather than a path, so that the entry point loads as this module did (compiled, or through a hook).
    const worker = new Worker(`require(${JSON.stringify(this.entry)}).runWorkerThread();`, {
      eval: true,
      env,
      workerData: { slot },
      resourceLimits: { maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB, maxOldGenerationSizeMb: WORKER_OLD_GENERATION_MB },
    });
    const startedAt = Date.now();
    this.workers.set(slot, { worker, startedAt });
    worker.on('error', (err) => this.logger.error(`Worker thread ${slot} failed: ${err.stack ?? err.message}`));
    worker.once('exit', (code) => {
      this.workers.delete(slot);
      if (this.stopping) return;
      const lived = Date.now() - startedAt;
      const previous = this.restartDelays.get(slot);
      const delay = lived >= STABLE_AFTER_MS || !previous ? FIRST_RESTART_DELAY_MS : Math.min(previous * 2, MAX_RESTART_DELAY_MS);
      this.restartDelays.set(slot, delay);
      this.logger.error(`Worker thread ${slot} exited (code ${code}) after ${Math.round(lived / 1000)} s: starting another in ${delay} ms`);
      setTimeout(() => this.stopping || this.start(slot), delay).unref();
    });
  }
}

/** Asks the worker to shut down as on `signal`; terminates it if it has not stopped within `boundMs`. */
function stop(worker: Worker, signal: string, boundMs: number): Promise<void> {
  return new Promise((resolve) => {
    const terminate = setTimeout(() => void worker.terminate(), boundMs);
    worker.once('exit', () => {
      clearTimeout(terminate);
      resolve();
    });
    worker.postMessage({ type: 'shutdown', signal } satisfies ToWorker);
  });
}
