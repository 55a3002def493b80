import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import { ERROR_STATUS } from '../errors/error-code';
import { ErrorBodyDto } from '../errors/error-body';
import { AppConfigService } from '../../config/app-config.service';
import { addGlobalResponses } from './global-responses';

const errorsTable = Object.entries(ERROR_STATUS)
  .map(([code, status]) => `| \`${code}\` | ${status} |`)
  .join('\n');

/** Swagger UI at /docs, the OpenAPI document at /docs-json. */
export function setupSwagger(app: INestApplication, config: AppConfigService): void {
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
            'again (`Idempotent-Replayed: true`); the same key with another body is 409 `IDEMPOTENCY_CONFLICT`.',
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
      .setVersion('1.0')
      .setLicense('MIT', 'https://opensource.org/license/mit')
      .addServer(config.publicUrl)
      .addBearerAuth({ type: 'http', scheme: 'bearer', description: 'Admin or usage key' }, 'BearerKey')
      .addApiKey({ type: 'apiKey', in: 'header', name: 'X-Api-Key', description: 'Admin or usage key' }, 'ApiKeyHeader')
      .addApiKey({ type: 'apiKey', in: 'header', name: 'X-Public-Token', description: 'Public token' }, 'PublicToken')
      .addBasicAuth({ type: 'http', scheme: 'basic', description: 'Any user name, an operator admin key as the password' }, 'OperatorBasic')
      .addBearerAuth({ type: 'http', scheme: 'bearer', description: 'METRICS_TOKEN (GET /metrics only)' }, 'MetricsToken')
      .build(),
    { extraModels: [ErrorBodyDto] },
  );
  addGlobalResponses(document);
  SwaggerModule.setup('docs', app, document, { jsonDocumentUrl: 'docs-json', customSiteTitle: 'Mailroom API' });
}
