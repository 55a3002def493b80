import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, type OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import type { Request } from 'express';
import { ERROR_STATUS } from '../errors/error-code';
import { ErrorBodyDto } from '../errors/error-body';
import { AppConfigService } from '../../config/app-config.service';
import { addGlobalResponses, type RateLimitedRoute } from './global-responses';

const errorsTable = Object.entries(ERROR_STATUS)
  .map(([code, status]) => `| \`${code}\` | ${status} |`)
  .join('\n');

/** The version of the API is the package's: one number, in package.json. */
const VERSION = (JSON.parse(readFileSync(join(__dirname, '..', '..', '..', 'package.json'), 'utf8')) as { version: string }).version;

/** A Host header that can stand in a URL (a name or address and a port). */
const HOST = /^[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/;

/**
 * The document as a request sees it: the origin it was fetched from is its first server, so that Swagger UI's "Try
 * it out" calls the address that served the page (behind a proxy, or on another port than PUBLIC_URL says).
 */
export function servedFrom(request: Request, document: OpenAPIObject): OpenAPIObject {
  const host = request.get('host');
  if (!host || !HOST.test(host)) return document;
  const origin = `${request.protocol}://${host}`;
  if (document.servers?.some((server) => server.url === origin)) return document;
  return { ...document, servers: [{ url: origin, description: 'The address this page was served from' }, ...(document.servers ?? [])] };
}

/** Swagger UI at /docs, the OpenAPI document at /docs-json. */
export function setupSwagger(app: INestApplication, config: AppConfigService, isRateLimited: RateLimitedRoute): void {
  const document = SwaggerModule.createDocument(
    app,
    new DocumentBuilder()
      .setTitle('Mailroom')
      .setDescription(
        [
          'Self-hosted email sending, form submissions and forwarding.',
          '',
          '## Authentication',
          `Admin and usage keys (\`${config.keyPrefix}_sk_admin_…\`, \`${config.keyPrefix}_sk_usage_…\`) go in ` +
            '`Authorization: Bearer <key>`, `X-Api-Key` or `service-Api-Key`; public tokens ' +
            `(\`${config.keyPrefix}_pk_…\`) in \`X-Public-Token\`. Missing or invalid credentials get 401, a valid key ` +
            'without the permission 403.',
          '',
          '## Rate limits',
          'Every response carries `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Reset` (Unix seconds) and ' +
            '`X-RateLimit-Scope` (`api-key`, `account`, `endpoint`, `ip`) for the tightest limit that applied. A 429 adds ' +
            '`Retry-After` and `X-RateLimit-RetryAfter`; `GET /rate-limits/status` shows every limit of the calling key.',
          '',
          '## Idempotency',
          'Send endpoints take an `Idempotency-Key` header: the same key and body within 24 h returns the first answer ' +
            'again (`Idempotent-Replayed: true`); the same key with another body is 409 `IDEMPOTENCY_CONFLICT`. A key ' +
            'belongs to the API key that sent it (without one: the client IP) and to the method and path.',
          '',
          '<a id="errors"></a>',
          '## Errors',
          'Every error has one body: `{"error": {"code", "message", "details"}, "documentation"}`.',
          '',
          '| code | status |',
          '|---|---|',
          errorsTable,
        ].join('\n'),
      )
      .setVersion(VERSION)
      .setLicense('MIT', 'https://opensource.org/license/mit')
      .addServer(config.publicUrl, 'PUBLIC_URL')
      // addBearerAuth() would label the keys JWTs; they are opaque keys.
      .addSecurity('BearerKey', { type: 'http', scheme: 'bearer', description: 'Admin or usage key' })
      .addApiKey({ type: 'apiKey', in: 'header', name: 'X-Api-Key', description: 'Admin or usage key' }, 'ApiKeyHeader')
      .addApiKey({ type: 'apiKey', in: 'header', name: 'X-Public-Token', description: 'Public token' }, 'PublicToken')
      .addBasicAuth({ type: 'http', scheme: 'basic', description: 'Any user name, an operator admin key as the password' }, 'OperatorBasic')
      .addSecurity('MetricsToken', { type: 'http', scheme: 'bearer', description: 'METRICS_TOKEN (GET /metrics only)' })
      .build(),
    { extraModels: [ErrorBodyDto] },
  );
  addGlobalResponses(document, `${config.publicUrl}/docs#errors`, isRateLimited);
  SwaggerModule.setup('docs', app, document, {
    jsonDocumentUrl: 'docs-json',
    customSiteTitle: 'Mailroom API',
    patchDocumentOnRequest: <TRequest>(request: TRequest, _response: unknown, served: OpenAPIObject) =>
      servedFrom(request as Request, served),
  });
}
