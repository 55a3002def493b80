import { ArgumentsHost, BadRequestException, Logger, NotFoundException } from '@nestjs/common';
import { QueryFailedError } from 'typeorm';
import { AppConfigService } from '../../config/app-config.service';
import { validateEnv } from '../../config/env.schema';
import { AllExceptionsFilter } from './all-exceptions.filter';
import { AppException } from './app.exception';
import { ErrorCode } from './error-code';

function render(exception: unknown) {
  const sent: { status?: number; body?: any; headers: Record<string, string> } = { headers: {} };
  const response = {
    headersSent: false,
    setHeader: (name: string, value: string) => (sent.headers[name] = value),
    removeHeader: (name: string) => delete sent.headers[name],
    status(code: number) {
      sent.status = code;
      return this;
    },
    json: (body: unknown) => (sent.body = body),
  };
  const request = { method: 'GET', path: '/x', id: 'req-1' };
  const host = { switchToHttp: () => ({ getResponse: () => response, getRequest: () => request }) } as unknown as ArgumentsHost;
  const config = new AppConfigService(validateEnv({ NODE_ENV: 'test', PUBLIC_URL: 'https://mail.example.com/' }));
  new AllExceptionsFilter(config).catch(exception, host);
  return sent;
}

describe('AllExceptionsFilter', () => {
  beforeAll(() => jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined));

  it('renders AppExceptions with their status, details and headers', () => {
    const sent = render(new AppException(ErrorCode.ApiKeyRateLimit, 'slow down', { limit: 5 }, { 'Retry-After': '7' }));
    expect(sent.status).toBe(429);
    expect(sent.headers).toEqual({ 'Retry-After': '7', 'Content-Type': 'application/json; charset=utf-8' });
    expect(sent.body).toEqual({
      error: { code: 'API_KEY_RATE_LIMIT', message: 'slow down', details: { limit: 5 } },
      documentation: 'https://mail.example.com/docs#errors',
    });
  });

  it('maps Nest’s own exceptions to codes by status', () => {
    expect(render(new NotFoundException()).body.error.code).toBe('NOT_FOUND');
    expect(render(new BadRequestException('bad')).body.error.code).toBe('VALIDATION_FAILED');
  });

  it('answers 503 with Retry-After when PostgreSQL cannot be reached', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    const sent = render(new QueryFailedError('SELECT 1', [], refused));
    expect(sent.status).toBe(503);
    expect(sent.headers).toMatchObject({ 'Retry-After': '1' });
    expect(sent.body.error).toEqual({ code: 'SERVICE_UNAVAILABLE', message: 'The database is unavailable; retry shortly' });
  });

  it('answers unknown errors with a bare 500: no SQL, no stack', () => {
    const sql = new QueryFailedError('SELECT secret FROM api_keys', [], new Error('relation "api_keys" does not exist'));
    const sent = render(sql);
    expect(sent.status).toBe(500);
    expect(sent.body.error).toEqual({ code: 'INTERNAL', message: 'Internal server error' });
    expect(JSON.stringify(sent.body)).not.toMatch(/SELECT|api_keys|at /);
  });
});
