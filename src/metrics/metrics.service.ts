import { Injectable, OnModuleDestroy, OnModuleInit, Optional } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import type { Job, Queue } from 'bull';
import { AggregatorRegistry } from 'prom-client';
import { WorkerSupervisor } from '../worker-threads/worker-supervisor';
import { allQueues } from '../queue/all-queues';
import { jobDuration, queueJobs, registry } from './metrics';

const COUNTED_STATES = ['waiting', 'active', 'delayed', 'failed'] as const;

/** The Prometheus text of this process: queue depths read at scrape time, and the duration of every job it runs. */
@Injectable()
export class MetricsService implements OnModuleInit, OnModuleDestroy {
  private queues: Queue[] = [];
  private readonly listeners: [Queue, string, (...args: any[]) => void][] = [];

  constructor(
    private readonly moduleRef: ModuleRef,
    @Optional() private readonly workerThreads?: WorkerSupervisor,
  ) {}

  onModuleInit(): void {
    this.queues = allQueues(this.moduleRef);
    for (const queue of this.queues) {
      this.listen(queue, 'completed', (job: Job) => this.observe(queue, job, 'completed'));
      this.listen(queue, 'failed', (job: Job) => this.observe(queue, job, 'failed'));
    }
  }

  onModuleDestroy(): void {
    for (const [queue, event, listener] of this.listeners) queue.removeListener(event, listener);
  }

  readonly contentType = registry.contentType;

  /** This process's metrics; under APP_ROLE=all, its worker threads' added up with the main thread's. */
  async render(): Promise<string> {
    await this.collectQueueDepths();
    if (!this.workerThreads) return registry.metrics();
    const [own, threads] = await Promise.all([registry.getMetricsAsJSON(), this.workerThreads.collectMetrics()]);
    return AggregatorRegistry.aggregate([own, ...threads]).metrics();
  }

  /** Sets mailroom_queue_jobs from Redis; a queue Redis cannot answer for keeps its last values. */
  private async collectQueueDepths(): Promise<void> {
    await Promise.all(
      this.queues.map(async (queue) => {
        const counts = await queue.getJobCounts().catch(() => null);
        if (!counts) return;
        for (const state of COUNTED_STATES) queueJobs.set({ queue: queue.name, state }, counts[state]);
      }),
    );
  }

  private listen(queue: Queue, event: string, listener: (...args: any[]) => void): void {
    queue.on(event, listener);
    this.listeners.push([queue, event, listener]);
  }

  private observe(queue: Queue, job: Job, outcome: 'completed' | 'failed'): void {
    if (!job.processedOn) return;
    jobDuration.observe({ queue: queue.name, outcome }, ((job.finishedOn ?? Date.now()) - job.processedOn) / 1000);
  }
}
