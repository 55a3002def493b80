import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Logger as PinoLogger } from 'nestjs-pino';
import { AppModule } from './app.module';
import { AppConfigService, loadConfigOrExit } from './config/app-config.service';
import { startProbeServer } from './health/probe-server';

/** Worker entry point: the queue processors without the API (APP_ROLE=worker); probes and metrics on WORKER_PORT. */
export async function startWorker(config: AppConfigService): Promise<void> {
  const app = await NestFactory.createApplicationContext(AppModule.forRoot({ config }), { bufferLogs: true });
  app.useLogger(app.get(PinoLogger));
  app.enableShutdownHooks();
  await app.init();
  const port = config.env.WORKER_PORT;
  if (port > 0) {
    const probes = await startProbeServer(app, port);
    // Served until the process exits, so that readiness says `shutting_down` while the jobs drain.
    probes.unref();
  }
  new Logger('Mailroom').log(port > 0 ? `Worker started: /health and /metrics on port ${port}` : 'Worker started');
}

if (require.main === module) {
  void startWorker(loadConfigOrExit({ APP_ROLE: 'worker' }));
}
