import { getSchemaPath, type OpenAPIObject } from '@nestjs/swagger';
import type { OperationObject, ParameterObject, ResponseObject } from '@nestjs/swagger/dist/interfaces/open-api-spec.interface';
import { ErrorBodyDto } from '../errors/error-body';
import { errorExample } from '../errors/error-examples';

/** Whether the limiter counts requests of this method to this path. */
export type RateLimitedRoute = (method: string, path: string) => boolean;

const OPERATION_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

const RATE_LIMITED =
  'a rate limit ran out (RATE_LIMIT_EXCEEDED, API_KEY_RATE_LIMIT, IP_RATE_LIMIT or ENDPOINT_RATE_LIMIT; see Rate limits above); ' +
  'details: limit, remaining, reset_time, retry_after, scope.';

function errorResponse(description: string, headers?: ResponseObject['headers']): ResponseObject {
  return { description, ...(headers && { headers }), content: { 'application/json': { schema: { $ref: getSchemaPath(ErrorBodyDto) } } } };
}

/**
 * Adds to each operation what global code does to it, which no handler's decorators say: the 400 of the validation
 * pipe (it checks every path parameter, query and body) and of the body parsers, the limiter's 429, the empty
 * security requirement of open routes, and the path parameters of handlers that read the path themselves (one CORS
 * preflight serves six paths). Responses a route documents itself are kept; a quota's 429 learns that rate limits
 * answer it too. `isRateLimited` is the limiter's rule of which requests it counts.
 */
export function addGlobalResponses(document: OpenAPIObject, documentation: string, isRateLimited: RateLimitedRoute): void {
  for (const [path, item] of Object.entries(document.paths)) {
    for (const method of OPERATION_METHODS) {
      const operation = item[method];
      if (!operation) continue;
      completeOperation(method, path, operation, isRateLimited);
      addErrorExamples(operation, documentation);
    }
  }
}

/** Each error response shows its own error: the code its description names, or its status's usual one. */
function addErrorExamples(operation: OperationObject, documentation: string): void {
  for (const [status, response] of Object.entries(operation.responses) as [string, ResponseObject][]) {
    const content = response.content?.['application/json'];
    if (Number(status) < 400 || !content || content.example || content.examples) continue;
    const example = errorExample(Number(status), response.description ?? '', documentation);
    if (example) content.example = example;
  }
}

function completeOperation(method: string, path: string, operation: OperationObject, isRateLimited: RateLimitedRoute): void {
  const parameters = (operation.parameters ?? []) as ParameterObject[];
  for (const [, name] of path.matchAll(/\{(\w+)\}/g)) {
    if (!parameters.some((p) => p.in === 'path' && p.name === name)) {
      parameters.push({ name, in: 'path', required: true, schema: { type: 'string' } });
    }
  }
  operation.parameters = parameters;

  // Every @Auth route names its schemes; one that names none is @Public: it takes no credential.
  operation.security ??= [{}];

  const responses = operation.responses;
  const inputs: string[] = (['path', 'query'] as const).filter((place) => parameters.some((p) => p.in === place));
  if (operation.requestBody) inputs.push('body');
  if (inputs.length > 0 && !responses['400']) {
    responses['400'] = errorResponse(
      `VALIDATION_FAILED: a value of the ${inputs.join(' or ')} is invalid; details.fields names each one` +
        (operation.requestBody ? '. MALFORMED_JSON: the body is not JSON.' : '.'),
    );
  }
  if (isRateLimited(method, path)) {
    const existing = responses['429'] as ResponseObject | undefined;
    if (!existing) {
      responses['429'] = errorResponse(`Too many requests: ${RATE_LIMITED}`, {
        'Retry-After': { description: 'Seconds until the limit allows a request again', schema: { type: 'integer', example: 42 } },
      });
    } else if (!/rate limit/i.test(existing.description)) {
      existing.description = `${existing.description} Or ${RATE_LIMITED}`;
    }
  }
}
