import type { IncomingMessage, ServerResponse } from 'node:http';
import { AppConfigService } from '../../config/app-config.service';
import { validateEnv } from '../../config/env.schema';
import { loggerOptions } from './logger.options';

describe('request logging', () => {
  const pinoHttp = loggerOptions(new AppConfigService(validateEnv({ NODE_ENV: 'test' }))).pinoHttp as {
    customLogLevel: (req: IncomingMessage, res: ServerResponse, err?: Error) => string;
    customErrorObject: (req: IncomingMessage, res: ServerResponse, err: Error, logged: Record<string, unknown>) => object;
  };
  const response = (statusCode: number) => ({ statusCode }) as ServerResponse;
  const request = {} as IncomingMessage;

  it('logs a 503 (an outage, logged once where it is found) as a warning without a stack', () => {
    expect(pinoHttp.customLogLevel(request, response(503))).toBe('warn');
    const logged = { res: {}, err: new Error('failed with status code 503'), responseTime: 3 };
    expect(pinoHttp.customErrorObject(request, response(503), logged.err, logged)).toEqual({ res: {}, responseTime: 3 });
  });

  it('keeps other server errors at error level with their error', () => {
    expect(pinoHttp.customLogLevel(request, response(500))).toBe('error');
    const logged = { res: {}, err: new Error('boom'), responseTime: 3 };
    expect(pinoHttp.customErrorObject(request, response(500), logged.err, logged)).toBe(logged);
    expect(pinoHttp.customLogLevel(request, response(404))).toBe('warn');
    expect(pinoHttp.customLogLevel(request, response(200))).toBe('info');
  });
});

describe('request lines', () => {
  const pinoHttp = loggerOptions(new AppConfigService(validateEnv({ NODE_ENV: 'test' }))).pinoHttp as {
    serializers: { req: (req: Record<string, unknown>) => Record<string, unknown> };
  };

  it('say which request it was, and carry none of its headers (keys and tokens travel in them)', () => {
    const serialised = {
      id: 'req-1',
      method: 'POST',
      url: '/v1/send',
      headers: { 'x-api-key': 'svc_sk_live_secret', authorization: 'Bearer svc_sk_live_secret', cookie: 'session=secret' },
      remoteAddress: '127.0.0.1',
    };
    const logged = pinoHttp.serializers.req(serialised);
    expect(logged).toEqual({ id: 'req-1', method: 'POST', url: '/v1/send' });
    expect(JSON.stringify(logged)).not.toContain('secret');
  });
});
