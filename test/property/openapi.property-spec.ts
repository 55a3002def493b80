import fc from 'fast-check';
import { ErrorCode } from '../../src/common/errors/error-code';
import { bearer, createAccount, createKey } from '../support/factories';
import { rawRequest, type RawResponse } from '../support/raw-request';
import { createTestApp, TestApp } from '../support/test-app';
import { operationsOf, requestsFor, type FuzzRequest, type KnownValues, type Operation } from './openapi-requests';

/** Fixed in CI so a run is repeatable; FUZZ_SEED and FUZZ_RUNS explore further. */
const SEED = Number(process.env.FUZZ_SEED ?? 20_260_609);
const RUNS = Number(process.env.FUZZ_RUNS ?? 2000);
const REQUEST_TIMEOUT_MS = 10_000;
const DOCUMENTATION = 'http://mailroom.test/docs#errors';
const ERROR_CODES = new Set<string>(Object.values(ErrorCode));

const send = {
  from: 'news@example.com',
  to: ['grace@example.org'],
  cc: ['Ada <ada2@example.org>'],
  subject: 'Hi {{name}}',
  text: 'Hello',
  html: '<p>Hello</p>',
  headers: { 'X-Campaign': 'spring' },
  variables: { name: 'Ada' },
  attachments: [{ filename: 'a.txt', content: 'aGk=', contentType: 'text/plain' }],
};
const form = { recipients: ['team@example.com'], subject: 'New message', replies: true };

/** A body each operation accepts; the generator also sends them with one thing made wrong. */
const VALID_BODIES: Record<string, unknown> = {
  'POST /admin/accounts': { name: 'Acme' },
  'POST /api-keys': {
    name: 'k',
    keyType: 'usage',
    permissions: ['email.send'],
    restrictions: { ip_whitelist: ['10.0.0.0/8'], domain_restrictions: ['example.com'], rate_limit: 10, burst_limit: 5 },
  },
  'POST /auth/keys': { name: 'k', permissions: ['email.send'] },
  'POST /domains': { domain: 'fuzz.example.com' },
  'POST /domains/verify': { domain: 'example.com' },
  'PUT /domains/{domain}': {
    contactRecipients: ['team@example.com'],
    forwarding: { info: ['owner@example.net'] },
    forms: { contact: form },
  },
  'POST /email/templates': { name: 'fuzzed', description: 'd', subject: 'Hi {{name}}', html: '<p>{{name}}</p>', text: 'Hi {{name}}' },
  'PUT /email/templates/{name}': { subject: 'Hello {{name}}', description: 'changed' },
  'POST /email/templates/{name}/render': { variables: { name: 'Ada', items: [{ title: 'Engines' }] } },
  'POST /email/suppression': { email: 'someone@example.org', reason: 'manual' },
  'POST /email/send': send,
  'POST /api/email/send': send,
  'POST /v1/send': send,
  'POST /projects': { name: 'Site' },
  'POST /collections': { slug: 'forms', name: 'Forms', forms: { 'contact-us': form } },
  'POST /instant/forms/batch': { forms: [{ name: 'Landing', email: 'owner@example.org' }] },
};

/** Why a response breaks the contract, or null: no 5xx, and every 4xx exactly the D-10 body. */
function violation(res: RawResponse): string | null {
  if (res.status >= 500) return `answered ${res.status}`;
  if (res.status < 400) return null;
  const body = res.body;
  if (!String(res.headers['content-type']).startsWith('application/json')) return `a ${res.status} without a JSON body`;
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return `a ${res.status} whose body is not an object`;
  if (Object.keys(body).sort().join() !== 'documentation,error') return `a ${res.status} body with keys ${Object.keys(body).join(', ')}`;
  if (body.documentation !== DOCUMENTATION) return `documentation is ${JSON.stringify(body.documentation)}`;
  const { error } = body;
  if (error === null || typeof error !== 'object') return 'error is not an object';
  const unexpected = Object.keys(error).filter((key) => !['code', 'message', 'details'].includes(key));
  if (unexpected.length) return `error has ${unexpected.join(', ')}`;
  if (!ERROR_CODES.has(error.code)) return `unknown error code ${JSON.stringify(error.code)}`;
  if (typeof error.message !== 'string' || error.message === '') return 'error.message is not a non-empty string';
  if ('details' in error && (error.details === null || typeof error.details !== 'object' || Array.isArray(error.details))) {
    return 'error.details is not an object';
  }
  return null;
}

/**
 * The property-based tier (issue 9): for every operation of the OpenAPI document, generated requests (random
 * and hostile path parameters, query values, bodies on and off the schema, content types, encodings and
 * credentials) never get a 5xx, never hang, and every 4xx is exactly the D-10 body. One app serves them all.
 */
describe('Every operation of the OpenAPI document, under generated input', () => {
  let t: TestApp;
  let operations: Operation[];
  let schemas: Record<string, never>;
  let adminKey: string;
  let usageKey: string;
  const known: KnownValues = {
    domain: ['example.com', 'unknown.example.org'],
    name: ['welcome', 'missing'],
    template: ['welcome'],
    email: ['ada@example.org', 'ADA@example.org'],
    to: ['ada@example.org', 'Grace <grace@example.org>'],
    from: ['news@example.com', 'Acme <news@example.com>'],
    keyType: ['admin', 'usage', 'public'],
    slug: ['website', 'missing'],
    formSlug: ['contact-us'],
    messageId: [],
    keyId: [],
    cursor: [],
    tenantId: [],
  };

  /** What the operations may have deleted or renamed comes back before the next operation. */
  async function ensureFixtures(op: Operation): Promise<void> {
    const admin = bearer(adminKey);
    await t.http.post('/domains').set(admin).send({ domain: 'example.com' });
    await t.http.post('/email/templates').set(admin).send({ name: 'welcome', subject: 'Hi {{name}}', html: '<p>Hi</p>' });
    await t.http.post('/email/suppression').set(admin).send({ email: 'ada@example.org' });
    if (op.pathParams.includes('keyId')) {
      known.keyId = [(await createKey(t, adminKey, { keyType: 'usage' })).keyId, 'key_unknown'];
    }
  }

  beforeAll(async () => {
    t = await createTestApp({ env: { DOMAIN_VERIFICATION: 'skip', APP_ROLE: 'api', RATE_LIMIT_ENABLED: 'false' } });
    let accountId: string;
    ({ adminKey, accountId } = await createAccount(t, 'Fuzzed'));
    known.tenantId = [accountId, 'acc_unknown'];
    ({ key: usageKey } = await createKey(t, adminKey, { keyType: 'usage' }));
    const admin = bearer(adminKey);
    await t.http.post('/domains').set(admin).send({ domain: 'example.com' }).expect(201);
    await t.http
      .post('/collections')
      .set(admin)
      .send({ slug: 'website', forms: { 'contact-us': { recipients: ['team@example.com'] } } })
      .expect(201);
    const sent = await t.http.post('/email/send').set(admin).send(send).expect(200);
    const scheduled = await t.http
      .post('/email/send')
      .set(admin)
      .send({ ...send, to: ['bob@example.org'], scheduleFor: new Date(Date.now() + 86_400_000).toISOString() })
      .expect(200);
    known.messageId = [sent.body.messageId, scheduled.body.messageId, 'msg_unknown'];

    const doc = (await t.http.get('/docs-json').expect(200)).body;
    operations = operationsOf(doc);
    schemas = doc.components.schemas;
  });
  afterAll(() => t.close());

  it(`answers ${RUNS} generated requests (seed ${SEED}) without a 5xx, a hang, or another error body`, async () => {
    expect(operations.length).toBeGreaterThan(30);
    const server = t.app.getHttpServer();
    const runsPerOperation = Math.ceil(RUNS / operations.length);
    const failures: string[] = [];

    for (const [index, op] of operations.entries()) {
      await ensureFixtures(op);
      const seed = SEED + index;
      const credentials = { admin: adminKey, usage: usageKey, operator: t.operatorKey };
      const requests = requestsFor(op, schemas, known, credentials, VALID_BODIES[`${op.method} ${op.path}`]);
      const property = fc.asyncProperty(requests, async (request: FuzzRequest) => {
        let res: RawResponse;
        try {
          res = await rawRequest(server, { ...request, timeoutMs: REQUEST_TIMEOUT_MS });
        } catch (err) {
          throw new Error(`no answer (${(err as Error).message})\n  ${request.summary}`, { cause: err });
        }
        const problem = violation(res);
        if (problem) throw new Error(`${problem}\n  ${request.summary}\n  → ${res.status} ${res.text.slice(0, 500)}`);
      });
      const details = await fc.check(property, { seed, numRuns: runsPerOperation });
      if (details.failed) {
        const reason = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
        failures.push(`${op.method} ${op.path} (operation seed ${seed}, fast-check path ${details.counterexamplePath}):\n  ${reason}`);
      }
    }

    if (failures.length > 0) {
      throw new Error(
        `${failures.length} of ${operations.length} operations broke the contract. ` +
          `Rerun with FUZZ_SEED=${SEED} FUZZ_RUNS=${RUNS}.\n\n${failures.join('\n\n')}`,
      );
    }
  }, 600_000);
});
