import type { NestExpressApplication } from '@nestjs/platform-express';
import { Logger } from 'nestjs-pino';
import type { NextFunction, Request, Response } from 'express';
import { AllExceptionsFilter, bodyParserError } from './common/errors/all-exceptions.filter';
import { setupSwagger } from './common/http/swagger';
import { createValidationPipe } from './common/http/validation.pipe';
import { AppConfigService } from './config/app-config.service';
import { setupBullBoard } from './queue/bull-board';

/** Everything an HTTP app needs besides its modules; main.ts and the e2e tests both call it. */
export function configureApp(app: NestExpressApplication): NestExpressApplication {
  const config = app.get(AppConfigService);
  app.useLogger(app.get(Logger));
  app.set('trust proxy', config.trustProxy);
  app.disable('x-powered-by');
  app.useBodyParser('json', { limit: '40mb' });
  app.useBodyParser('urlencoded', { limit: '40mb', extended: true });
  app.use((error: unknown, _request: Request, _response: Response, next: NextFunction) => next(bodyParserError(error) ?? error));
  app.useGlobalPipes(createValidationPipe());
  app.useGlobalFilters(new AllExceptionsFilter(config));
  app.enableShutdownHooks();
  setupSwagger(app, config);
  setupBullBoard(app);
  return app;
}
