import type { NestExpressApplication } from '@nestjs/platform-express';
import { Logger } from 'nestjs-pino';
import { json, urlencoded, type NextFunction, type Request, type Response } from 'express';
import { DataSource } from 'typeorm';
import { ApiKeyCache } from './auth/api-key.cache';
import { readCredential } from './auth/credentials';
import { AllExceptionsFilter, bodyParserError } from './common/errors/all-exceptions.filter';
import { answerClientErrors } from './common/errors/client-error';
import { DatabaseOutage } from './common/errors/database-unavailable';
import { URLENCODED_PARSER_DEPTH, verifyJsonBody } from './common/body-depth';
import { BodyGate } from './rate-limits/body-gate';
import { requestId } from './common/http/logger.options';
import { setupSwagger } from './common/http/swagger';
import { RateLimitService } from './rate-limits/rate-limit.service';
import { isRateLimited } from './rate-limits/rate-limit.policy';
import { createValidationPipe } from './common/http/validation.pipe';
import { AppConfigService } from './config/app-config.service';
import { onNewConnection } from './database/database.options';
import { httpMetrics } from './metrics/http-metrics';
import { MAX_SUBMISSION_BODY_BYTES } from './forms/uploads/submission-uploads';
import { readProviderEventsBody } from './provider-events/raw-body';
import { setupBullBoard } from './operator/bull-board';

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
  // Then every body is bounded by its route's limit and by the bytes all bodies being read may take at once.
  const bodyGate = createBodyGate(app, config);
  app.use(bodyGate.admit);
  // A provider call is read as bytes: its signature is checked before anything parses them.
  app.use(bodyGate.parser(readProviderEventsBody));
  // Bodies nesting deeper than MAX_BODY_DEPTH are refused here: JSON by a scan before it is parsed, url-encoded
  // ones by qs. body-parser decompresses gzip, deflate and br (zstd where Node has it); other encodings are 415.
  app.use(bodyGate.parser((limit) => json({ limit, verify: verifyJsonBody })));
  app.use(
    bodyGate.parser((limit) => {
      const options = { limit, extended: true, depth: URLENCODED_PARSER_DEPTH }; // `depth` is not in @types/body-parser 1.x
      return urlencoded(options);
    }),
  );
  app.use((error: unknown, _request: Request, _response: Response, next: NextFunction) => next(bodyParserError(error) ?? error));
  app.useGlobalPipes(createValidationPipe());
  const databaseOutage = new DatabaseOutage();
  onNewConnection(app.get(DataSource), () => databaseOutage.connected());
  app.useGlobalFilters(new AllExceptionsFilter(config, databaseOutage));
  app.enableShutdownHooks();
  setupSwagger(app, config, isRateLimited);
  return app;
}

/** The body gate with the configured limits; a request is an API key's call if its credential resolves to a key. */
function createBodyGate(app: NestExpressApplication, config: AppConfigService): BodyGate {
  const keys = app.get(ApiKeyCache);
  const { BODY_LIMIT_BYTES, API_BODY_LIMIT_BYTES, BODY_BYTES_IN_FLIGHT } = config.env;
  return new BodyGate(
    { body: BODY_LIMIT_BYTES, api: API_BODY_LIMIT_BYTES, upload: MAX_SUBMISSION_BODY_BYTES, inFlight: BODY_BYTES_IN_FLIGHT },
    // The limiter resolved the credential a moment ago (when it is on): this finds it in the cache.
    async (request) => {
      const credential = readCredential(request);
      return credential !== null && (await keys.resolve(credential.secret)) !== null;
    },
    `${config.publicUrl}/docs#errors`,
  );
}
