import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Params } from 'nestjs-pino';
import { AppConfigService } from '../../config/app-config.service';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Structured JSON logs; every request gets an id (X-Request-Id accepted or made) that is echoed back. */
export function loggerOptions(config: AppConfigService): Params {
  return {
    pinoHttp: {
      level: config.env.LOG_LEVEL,
      genReqId: (request: IncomingMessage, response: ServerResponse) => {
        const given = request.headers['x-request-id'];
        const id = typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
        response.setHeader('X-Request-Id', id);
        return id;
      },
      redact: ['req.headers.authorization', 'req.headers["x-api-key"]', 'req.headers["service-api-key"]', 'req.headers["x-public-token"]'],
      customLogLevel: (_request, response, error) =>
        error || response.statusCode >= 500 ? 'error' : response.statusCode >= 400 ? 'warn' : 'info',
      autoLogging: { ignore: (request) => request.url?.startsWith('/health') ?? false },
    },
  };
}
