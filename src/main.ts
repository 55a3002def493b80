import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { AppModule } from './app.module';
import { configureApp } from './app.setup';
import { loadConfigOrExit } from './config/app-config.service';
import { startWorker } from './worker';

/** HTTP entry point. APP_ROLE=all (default) also runs the queue workers here; APP_ROLE=worker runs no HTTP. */
async function bootstrap(): Promise<void> {
  const config = loadConfigOrExit();
  if (!config.runsApi) return startWorker(config);

  const app = await NestFactory.create<NestExpressApplication>(AppModule.forRoot({ config }), {
    bufferLogs: true,
    bodyParser: false,
  });
  configureApp(app);
  await app.listen(config.port);
  new Logger('Mailroom').log(`Listening on port ${config.port}: API docs at ${config.publicUrl}/docs`);
}

void bootstrap();
