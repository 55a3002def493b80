import type { NestExpressApplication } from '@nestjs/platform-express';
import { Logger } from 'nestjs-pino';
import type { NextFunction, Request, Response } from 'express';
import { AllExceptionsFilter, bodyParserError } from './common/errors/all-exceptions.filter';
import { requestId } from './common/http/logger.options';
import { setupSwagger } from './common/http/swagger';
import { RateLimitService } from './common/rate-limit/rate-limit.service';
import { createValidationPipe } from './common/http/validation.pipe';
import { AppConfigService } from './config/app-config.service';
import { setupBullBoard } from './queue/bull-board';

/** Everything an HTTP app needs besides its modules; main.ts and the e2e tests both call it. */
export function configureApp(app: NestExpressApplication): NestExpressApplication {
  const config = app.get(AppConfigService);
  app.useLogger(app.get(Logger));
  app.set('trust proxy', config.trustProxy);
  app.disable('x-powered-by');
  app.use(requestId);
  setupBullBoard(app); // operator-only behind basic auth, and its UI polls: not rate-limited
  // Limits apply before a body is read: a refused caller never costs a 40 MB parse.
  const limiter = app.get(RateLimitService);
  app.use((request: Request, response: Response, next: NextFunction) => limiter.enforce(request, response).then(() => next(), next));
  app.useBodyParser('json', { limit: '40mb' });
  app.useBodyParser('urlencoded', { limit: '40mb', extended: true });
  app.use((error: unknown, _request: Request, _response: Response, next: NextFunction) => next(bodyParserError(error) ?? error));
  app.useGlobalPipes(createValidationPipe());
  app.useGlobalFilters(new AllExceptionsFilter(config));
  app.enableShutdownHooks();
  setupSwagger(app, config);
  return app;
}
