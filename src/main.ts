import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { AppModule } from './app.module';
import { configureApp } from './app.setup';
import { loadConfigOrExit } from './config/app-config.service';
import { startWorker } from './worker';

/**
 * Entry point. APP_ROLE=api serves HTTP; APP_ROLE=worker runs the queue workers; APP_ROLE=all (the default) does
 * both: HTTP on the main thread and the queues in WORKER_PROCESSES worker threads, or all on one thread when it is 0.
 */
async function bootstrap(): Promise<void> {
  const config = loadConfigOrExit();
  if (!config.runsApi) return startWorker(config);

  // APP_ROLE=all on several cores: the main thread serves HTTP only; WORKER_PROCESSES worker threads deliver.
  const superviseWorkers = config.env.APP_ROLE === 'all' && config.env.WORKER_PROCESSES > 0;
  const appConfig = superviseWorkers ? config.withRole('api') : config;
  const app = await NestFactory.create<NestExpressApplication>(AppModule.forRoot({ config: appConfig, superviseWorkers }), {
    bufferLogs: true,
    bodyParser: false,
  });
  configureApp(app);
  await app.listen(config.port);
  new Logger('Mailroom').log(`Listening on port ${config.port}: API docs at ${config.publicUrl}/docs`);
}

void bootstrap();
