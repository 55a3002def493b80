import type { NestExpressApplication } from '@nestjs/platform-express';
import { Logger } from 'nestjs-pino';
import { json, urlencoded, type NextFunction, type Request, type Response } from 'express';
import { DataSource } from 'typeorm';
import { AllExceptionsFilter, bodyParserError } from './common/errors/all-exceptions.filter';
import { answerClientErrors } from './common/errors/client-error';
import { DatabaseOutage } from './common/errors/database-unavailable';
import { URLENCODED_PARSER_DEPTH, verifyJsonBody } from './common/http/body-depth';
import { requestId } from './common/http/logger.options';
import { setupSwagger } from './common/http/swagger';
import { RateLimitService } from './common/rate-limit/rate-limit.service';
import { createValidationPipe } from './common/http/validation.pipe';
import { AppConfigService } from './config/app-config.service';
import { onNewConnection } from './database/database.options';
import { httpMetrics } from './metrics/http-metrics';
import { keepProviderEventsBody } from './provider-events/raw-body';
import { setupBullBoard } from './queue/bull-board';

/** Everything an HTTP app needs besides its modules; main.ts and the e2e tests both call it. */
export function configureApp(app: NestExpressApplication): NestExpressApplication {
  const config = app.get(AppConfigService);
  app.useLogger(app.get(Logger));
  app.set('trust proxy', config.trustProxy);
  app.disable('x-powered-by');
  answerClientErrors(app.getHttpServer(), `${config.publicUrl}/docs#errors`);
  app.use(requestId);
  app.use(httpMetrics);
  setupBullBoard(app); // operator-only behind basic auth, and its UI polls: not rate-limited
  // Limits apply before a body is read: a refused caller never costs a 40 MB parse.
  const limiter = app.get(RateLimitService);
  app.use((request: Request, response: Response, next: NextFunction) => limiter.enforce(request, response).then(() => next(), next));
  // Bodies nesting deeper than MAX_BODY_DEPTH are refused here: JSON by a scan before it is parsed, url-encoded
  // ones by qs. body-parser decompresses gzip, deflate and br (zstd where Node has it); other encodings are 415.
  app.use(
    json({
      limit: '40mb',
      verify: (request, response, body, charset) => {
        verifyJsonBody(request, response, body, charset);
        keepProviderEventsBody(request, body);
      },
    }),
  );
  const urlencodedOptions = { limit: '40mb', extended: true, depth: URLENCODED_PARSER_DEPTH }; // not in @types/body-parser 1.x
  app.use(urlencoded(urlencodedOptions));
  app.use((error: unknown, _request: Request, _response: Response, next: NextFunction) => next(bodyParserError(error) ?? error));
  app.useGlobalPipes(createValidationPipe());
  const databaseOutage = new DatabaseOutage();
  onNewConnection(app.get(DataSource), () => databaseOutage.connected());
  app.useGlobalFilters(new AllExceptionsFilter(config, databaseOutage));
  app.enableShutdownHooks();
  setupSwagger(app, config);
  return app;
}
