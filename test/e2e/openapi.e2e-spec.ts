import { execFile } from 'node:child_process';
import { METHODS } from 'node:http';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { RequestMethod } from '@nestjs/common';
import { PATH_METADATA } from '@nestjs/common/constants';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import { PathsExplorer } from '@nestjs/core/router/paths-explorer';
import { AUTH_REQUIREMENT, type AuthRequirement } from '../../src/auth/auth.decorator';
import { ERROR_STATUS, type ErrorCode } from '../../src/common/errors/error-code';
import { isRateLimited } from '../../src/rate-limits/rate-limit.policy';
import { internalCitations } from '../support/internal-citations';
import { createTestApp, TestApp } from '../support/test-app';

const run = promisify(execFile);
const ROOT = join(__dirname, '..', '..');
const ERROR_BODY = '#/components/schemas/ErrorBodyDto';
const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

interface Response {
  description?: string;
  content?: Record<string, { schema?: { $ref?: string }; example?: { error?: { code?: string; details?: Record<string, unknown> } } }>;
}

interface Operation {
  operationId?: string;
  summary?: string;
  tags?: string[];
  security?: Record<string, string[]>[];
  parameters?: { in: string; name: string }[];
  requestBody?: unknown;
  responses?: Record<string, Response>;
}

interface Schema {
  type?: string;
  format?: string;
  items?: Schema;
  properties?: Record<string, Schema>;
  [keyword: string]: unknown;
}

type Document = {
  info: { version: string };
  servers: { url: string }[];
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema>; securitySchemes: Record<string, Record<string, unknown>> };
};

/** `/domains/:domain` as the document writes it: `/domains/{domain}`. */
const openApiPath = (path: string) => path.replace(/:(\w+)/g, '{$1}').replace(/(.)\/$/, '$1');

/**
 * Every method and path Express routes to a handler, but the Swagger UI's own (`/docs*`) and middleware bound to
 * every method of every path (Nest's MiddlewareConsumer); Bull Board is mounted middleware, not a route.
 */
function servedRoutes(t: TestApp): string[] {
  const { stack } = t.app.getHttpAdapter().getInstance().router as {
    stack: { route?: { path: string; methods: Record<string, boolean> } }[];
  };
  return stack.flatMap(({ route }) => {
    if (!route || /^\/docs([-/]|$)/.test(route.path) || METHODS.every((method) => route.methods[method.toLowerCase()])) return [];
    return Object.keys(route.methods).map((method) => `${method.toUpperCase()} ${openApiPath(route.path)}`);
  });
}

/** Who may call each route (the @Auth requirement, or 'public'), by `METHOD /path`. */
function authRequirements(t: TestApp): Map<string, AuthRequirement | 'public'> {
  const reflector = t.app.get(Reflector);
  const explorer = new PathsExplorer(new MetadataScanner());
  const requirements = new Map<string, AuthRequirement | 'public'>();
  for (const { instance, metatype } of t.app.get(DiscoveryService).getControllers()) {
    if (!instance || !metatype) continue;
    const prefixes: string[] = [Reflect.getMetadata(PATH_METADATA, metatype) ?? ''].flat();
    for (const route of explorer.scanForPaths(instance)) {
      const requirement = reflector.getAllAndOverride(AUTH_REQUIREMENT, [route.targetCallback, metatype]);
      for (const prefix of prefixes) {
        for (const path of route.path) {
          const full = `/${prefix}/${path}`.replace(/\/+/g, '/');
          requirements.set(`${RequestMethod[route.requestMethod]} ${openApiPath(full)}`, requirement);
        }
      }
    }
  }
  return requirements;
}

function operationsOf(doc: Document): { route: string; method: string; path: string; op: Operation }[] {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => HTTP_METHODS.includes(method))
      .map(([method, op]) => ({ route: `${method.toUpperCase()} ${path}`, method, path, op })),
  );
}

const hasSchema = (response: Response) => Object.values(response.content ?? {}).some((media) => media.schema !== undefined);
const isErrorBody = (response: Response) => response.content?.['application/json']?.schema?.$ref === ERROR_BODY;

/** Swagger UI shows something meaningful for it without an example: a choice, a flag, a date, another schema. */
function speaksForItself(schema: Schema): boolean {
  if (['example', 'enum', '$ref', 'allOf', 'oneOf', 'anyOf'].some((keyword) => keyword in schema)) return true;
  if (schema.type === 'boolean' || ['date-time', 'date', 'email', 'uri'].includes(schema.format ?? '')) return true;
  return schema.type === 'array' && schema.items !== undefined && speaksForItself(schema.items);
}

/** The security schemes a key type is sent with. */
const SCHEMES: Record<string, string[]> = {
  admin: ['BearerKey', 'ApiKeyHeader'],
  usage: ['BearerKey', 'ApiKeyHeader'],
  public: ['PublicToken'],
};

/** Problems of one operation, each naming what is missing. */
function problemsOf(method: string, path: string, op: Operation, requirement: AuthRequirement | 'public' | undefined): string[] {
  const problems: string[] = [];
  if (!op.operationId) problems.push('no operationId');
  if (!op.tags?.length) problems.push('no tag');
  if (!op.summary) problems.push('no summary');

  const responses = Object.entries(op.responses ?? {});
  const successes = responses.filter(([status]) => /^[23]\d\d$/.test(status));
  const described = successes.some(([status, response]) => hasSchema(response) || status === '204' || status.startsWith('3'));
  if (!described) problems.push(`no success response with a schema (has ${responses.map(([s]) => s).join(', ') || 'none'})`);

  for (const [status, response] of responses) {
    if (/^4\d\d$/.test(status) && !isErrorBody(response)) problems.push(`${status} is not an ErrorBodyDto`);
  }
  const documents = (status: string) => op.responses?.[status] !== undefined;
  if (isRateLimited(method, path) && !documents('429')) problems.push('no 429 (the route is rate-limited)');
  const takesInput = op.requestBody !== undefined || op.parameters?.some((p) => p.in === 'query' || p.in === 'path');
  if (takesInput && !documents('400')) problems.push('no 400 (the validation pipe checks its path, query or body)');
  if (path.includes('{') && !documents('404')) problems.push('no 404 (it names something in its path)');

  if (!op.security?.length) problems.push('no security requirement (`{}` for an open route)');
  if (requirement === undefined) problems.push('no @Auth or @Public found for it');
  if (requirement && requirement !== 'public') {
    const expected = new Set(requirement.keyTypes.flatMap((type) => SCHEMES[type]));
    if (requirement.anonymous) expected.add('(none)');
    const documented = new Set((op.security ?? []).flatMap((entry) => (Object.keys(entry).length ? Object.keys(entry) : ['(none)'])));
    if ([...expected].sort().join() !== [...documented].sort().join()) {
      problems.push(`security ${[...documented].join(', ') || 'none'}, expected ${[...expected].join(', ')}`);
    }
    if (!documents('401')) problems.push('no 401');
    if (!documents('403')) problems.push('no 403');
  }
  return problems;
}

/**
 * The OpenAPI document (issue 15): every route Express serves is in it, with an operationId, a tag, a summary, a
 * success response with a schema, the credentials it takes and its errors in the D-10 body; redocly lints it clean.
 */
describe('OpenAPI document', () => {
  let t: TestApp;
  let doc: Document;

  beforeAll(async () => {
    t = await createTestApp({ env: { APP_ROLE: 'api' } });
    doc = (await t.http.get('/docs-json').expect(200)).body;
  });
  afterAll(() => t.close());

  it('documents every route Express serves', () => {
    const documented = new Set(operationsOf(doc).map(({ route }) => route));
    const missing = servedRoutes(t).filter((route) => !documented.has(route));
    expect(missing).toEqual([]);
  });

  it('gives every operation an id, a tag, a summary, a success schema, its credentials and D-10 errors', () => {
    const requirements = authRequirements(t);
    const problems = operationsOf(doc).flatMap(({ route, method, path, op }) =>
      problemsOf(method, path, op, requirements.get(route)).map((problem) => `${route}: ${problem}`),
    );
    expect(problems).toEqual([]);
  });

  it('gives every property of every schema an example, unless its kind speaks for itself', () => {
    const missing = Object.entries(doc.components.schemas).flatMap(([name, schema]) =>
      Object.entries(schema.properties ?? {})
        .filter(([, property]) => !speaksForItself(property))
        .map(([property]) => `${name}.${property}`),
    );
    expect(missing).toEqual([]);
  });

  it('says its rules in plain words, citing no decision ids, issue numbers or spec the reader has not got', () => {
    expect(internalCitations(JSON.stringify(doc, null, 1))).toEqual([]);
  });

  it('labels keys as opaque keys, gives each error status its own example error, and the package’s version', () => {
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(doc.info.version).toBe(version);
    expect(doc.components.securitySchemes.BearerKey).toEqual({ type: 'http', scheme: 'bearer', description: 'Admin or usage key' });
    expect(JSON.stringify(doc.components.securitySchemes)).not.toContain('JWT');

    const examples = operationsOf(doc).flatMap(({ route, op }) =>
      Object.entries(op.responses ?? {})
        .filter(([status]) => Number(status) >= 400)
        .map(([status, response]) => ({
          route,
          status: Number(status),
          response,
          code: response.content?.['application/json']?.example?.error?.code,
        })),
    );
    const wrong = examples.filter(({ status, code }) => !code || ERROR_STATUS[code as ErrorCode] !== status);
    expect(wrong.map(({ route, status, code }) => `${route} ${status}: ${code}`)).toEqual([]);
    const codesOf = (status: number) => new Set(examples.filter((e) => e.status === status).map((e) => e.code));
    expect([...codesOf(401)]).toContain('AUTH_INVALID_KEY');
    expect([...codesOf(403)]).toContain('FORBIDDEN');
    expect([...codesOf(429)]).toContain('API_KEY_RATE_LIMIT');
    // A response that names its code shows that one.
    const named = examples.find(({ response, status }) => status === 429 && /\bQUOTA_EXCEEDED\b/.test(response.description ?? ''));
    expect(named?.code).toBe('QUOTA_EXCEEDED');
    const rateLimited = examples.find(({ code }) => code === 'API_KEY_RATE_LIMIT')!;
    expect(rateLimited.response.content!['application/json'].example!.error!.details).toMatchObject({ scope: 'api-key', remaining: 0 });
  });

  it('passes redocly lint with no error', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mailroom-openapi-'));
    try {
      const file = join(dir, 'openapi.json');
      await writeFile(file, JSON.stringify(doc));
      // redocly exits with 1 when it finds errors; the report is on stdout either way.
      const lint = await run('npx', ['redocly', 'lint', file, '--config', join(ROOT, 'redocly.yaml'), '--format', 'json'], {
        cwd: ROOT,
        env: { ...process.env, NODE_NO_WARNINGS: '1', REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
        maxBuffer: 64 * 1024 * 1024,
      }).catch((err: Error & { stdout?: string; stderr?: string }) => ({ stdout: err.stdout ?? '', stderr: err.stderr ?? err.message }));
      // On Node 20 a deprecation banner comes before the JSON report.
      const start = lint.stdout.indexOf('{');
      if (start < 0) throw new Error(`redocly gave no report:\n${lint.stdout}\n${lint.stderr}`);
      const report = JSON.parse(lint.stdout.slice(start));
      const errors = report.problems
        .filter((p: { severity: string }) => p.severity === 'error')
        .map(
          (p: { ruleId: string; message: string; location: { pointer: string }[] }) =>
            `${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`,
        );
      expect(errors).toEqual([]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
