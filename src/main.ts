import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { AppModule } from './app.module';
import { configureApp } from './app.setup';
import { nestLogger } from './logging/root-logger';
import { listenError } from './startup/startup-error';
import { beginStartup, failStartup, started } from './startup/startup';
import { startWorker } from './worker';

/**
 * Entry point. APP_ROLE=api serves HTTP; APP_ROLE=worker runs the queue workers; APP_ROLE=all (the default) does
 * both: HTTP on the main thread and the queues in WORKER_PROCESSES worker threads, or all on one thread when it is 0.
 */
async function bootstrap(): Promise<void> {
  const config = await beginStartup();
  if (!config.runsApi) return startWorker(config);

  // APP_ROLE=all on several cores: the main thread serves HTTP only; worker threads deliver (WORKER_PROCESSES of them,
  // fewer when the connection budgets cannot give each one a connection).
  const superviseWorkers = config.env.APP_ROLE === 'all' && config.connectionShares.workerThreads > 0;
  const appConfig = superviseWorkers ? config.httpThread() : config;
  const app = await NestFactory.create<NestExpressApplication>(AppModule.forRoot({ config: appConfig, superviseWorkers }), {
    logger: nestLogger(),
    abortOnError: false,
    bodyParser: false,
  });
  configureApp(app);
  await app.listen(config.port).catch((err: unknown) => {
    throw listenError(err, 'PORT', config.port) ?? err;
  });
  started();
  new Logger('Mailroom').log(`Listening on port ${config.port}: API docs at ${config.publicUrl}/docs`);
}

void bootstrap().catch(failStartup);
