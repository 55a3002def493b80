import 'reflect-metadata';
import { parentPort } from 'node:worker_threads';
import { type INestApplicationContext, Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module';
import { nestLogger } from './logging/root-logger';
import { AppConfigService } from './config/app-config.service';
import { startProbeServer } from './health/probe-server';
import { listenError } from './startup/startup-error';
import { beginStartup, failStartup, started } from './startup/startup';
import { registry } from './metrics/metrics';
import type { FromWorker, ToWorker } from './worker-threads/worker-messages';

/** Worker entry point: the queue processors without the API (APP_ROLE=worker); probes and metrics on WORKER_PORT. */
export async function startWorker(config: AppConfigService): Promise<void> {
  const app = await createWorkerContext(config);
  app.enableShutdownHooks();
  await app.init();
  const port = config.env.WORKER_PORT;
  if (port > 0) {
    const probes = await startProbeServer(app, port).catch((err: unknown) => {
      throw listenError(err, 'WORKER_PORT', port) ?? err;
    });
    // Served until the process exits, so that readiness says `shutting_down` while the jobs drain.
    probes.unref();
  }
  started();
  new Logger('Mailroom').log(port > 0 ? `Worker started: /health and /metrics on port ${port}` : 'Worker started');
}

/**
 * A worker thread of `APP_ROLE=all` (WorkerSupervisor, with APP_ROLE=worker in its environment): signals reach
 * the main thread only, which passes shutdown on as a message (the thread ends when its context has closed), and
 * asks for the thread's metrics the same way.
 */
export async function runWorkerThread(): Promise<void> {
  // A thread that cannot start says why and ends; the supervisor starts it again after a growing delay.
  const app = await createWorkerContext(await beginStartup()).catch(failStartup);
  parentPort!.on('message', (message: ToWorker) => {
    if (message.type === 'metrics') {
      void registry
        .getMetricsAsJSON()
        .then((metrics) => parentPort!.postMessage({ type: 'metrics', id: message.id, metrics } satisfies FromWorker));
    } else if (message.type === 'shutdown') {
      // INestApplicationContext's type leaves out close(signal), which the hooks need to drain as on SIGTERM.
      void (app as INestApplicationContext & { close(signal?: string): Promise<void> })
        .close(message.signal)
        .finally(() => process.exit(0));
    }
  });
  await app.init().catch(failStartup);
}

async function createWorkerContext(config: AppConfigService): Promise<INestApplicationContext> {
  return NestFactory.createApplicationContext(AppModule.forRoot({ config }), { logger: nestLogger(), abortOnError: false });
}

if (require.main === module) {
  void beginStartup({ APP_ROLE: 'worker' }).then(startWorker).catch(failStartup);
}
