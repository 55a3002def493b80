import { Global, Module } from '@nestjs/common';
import { WorkerSupervisor } from './worker-supervisor';

/**
 * The main thread of `APP_ROLE=all` with WORKER_PROCESSES > 0: starts and supervises the worker threads. Global, so
 * that graceful shutdown finds the supervisor where there is one.
 */
@Global()
@Module({ providers: [WorkerSupervisor], exports: [WorkerSupervisor] })
export class WorkerThreadsModule {}
