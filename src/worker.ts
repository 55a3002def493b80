import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Logger as PinoLogger } from 'nestjs-pino';
import { AppModule } from './app.module';
import { AppConfigService, loadConfigOrExit } from './config/app-config.service';

/** Worker entry point: the queue processors without HTTP (APP_ROLE=worker). */
export async function startWorker(config: AppConfigService): Promise<void> {
  const app = await NestFactory.createApplicationContext(AppModule.forRoot({ config }), { bufferLogs: true });
  app.useLogger(app.get(PinoLogger));
  app.enableShutdownHooks();
  await app.init();
  new Logger('Mailroom').log('Worker started');
}

if (require.main === module) {
  void startWorker(loadConfigOrExit({ APP_ROLE: 'worker' }));
}
