import { BeforeApplicationShutdown, Injectable, Logger, Optional } from '@nestjs/common';
import { HttpAdapterHost, ModuleRef } from '@nestjs/core';
import type { Server } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { AppConfigService } from '../config/app-config.service';
import { allQueues } from '../queue/all-queues';
import { WorkerSupervisor } from '../worker-threads/worker-supervisor';
import { ShutdownState } from './shutdown-state';

/**
 * SIGTERM (D-34): readiness turns 503 and stays served for SHUTDOWN_DELAY_MS, then the HTTP server stops taking
 * connections (requests under way finish) while the queue workers take no new job and the running ones get
 * SHUTDOWN_TIMEOUT_MS to finish; worker threads (APP_ROLE=all) drain theirs the same way. Nest then closes the
 * stores. A job still running at the deadline keeps its job: its lock lapses and another worker runs it. The
 * inbound SMTP server closes itself in the same phase.
 */
@Injectable()
export class GracefulShutdown implements BeforeApplicationShutdown {
  private readonly logger = new Logger(GracefulShutdown.name);

  constructor(
    private readonly state: ShutdownState,
    private readonly config: AppConfigService,
    private readonly adapterHost: HttpAdapterHost,
    private readonly moduleRef: ModuleRef,
    @Optional() private readonly workerThreads?: WorkerSupervisor,
  ) {}

  async beforeApplicationShutdown(signal?: string): Promise<void> {
    if (!signal) return; // app.close() in tests: nothing is draining
    this.state.requested = true;
    this.logger.log(`${signal}: shutting down`);
    const { SHUTDOWN_DELAY_MS } = this.config.env;
    if (SHUTDOWN_DELAY_MS > 0) await sleep(SHUTDOWN_DELAY_MS);
    const httpStopped = this.stopHttp();
    await Promise.all([httpStopped, this.drainQueues(httpStopped), this.workerThreads?.stop(signal)]);
  }

  private stopHttp(): Promise<void> {
    const server = this.adapterHost.httpAdapter?.getHttpServer() as Server | undefined;
    if (!server?.listening) return Promise.resolve();
    return new Promise((resolve) => server.close(() => resolve()));
  }

  private async drainQueues(httpStopped: Promise<void>): Promise<void> {
    const queues = allQueues(this.moduleRef);
    await Promise.all(queues.map((queue) => queue.pause(true, true).catch(() => undefined)));
    const timeoutMs = this.config.env.SHUTDOWN_TIMEOUT_MS;
    const deadline = new AbortController();
    const finished = await Promise.race([
      Promise.all(queues.map((queue) => queue.whenCurrentJobsFinished().catch(() => undefined))).then(() => true),
      sleep(timeoutMs, false, { signal: deadline.signal }).catch(() => false),
    ]);
    deadline.abort();
    if (!finished) this.logger.warn(`Jobs still running after ${timeoutMs} ms are left to another worker`);
    // A request still under way queues what it accepted: its queue closes after the last response (else the sweeper
    // would have to find the message, minutes later).
    await httpStopped;
    await Promise.all(queues.map((queue) => queue.close(true).catch(() => undefined)));
  }
}
