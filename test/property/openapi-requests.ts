import fc from 'fast-check';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';

/** The part of an OpenAPI 3 schema the generators read. */
export interface Schema {
  $ref?: string;
  type?: string;
  format?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  oneOf?: Schema[];
  enum?: unknown[];
  example?: unknown;
  additionalProperties?: Schema | boolean;
}

interface OpenApiDocument {
  paths: Record<string, Record<string, OpenApiOperation>>;
  components: { schemas: Record<string, Schema> };
}

interface OpenApiOperation {
  parameters?: { name: string; in: string; schema?: Schema }[];
  requestBody?: { content: Record<string, { schema: Schema }> };
}

export interface Operation {
  method: string;
  /** As the document writes it: `/domains/{domain}`. */
  path: string;
  pathParams: string[];
  query: { name: string; schema: Schema }[];
  body?: Schema;
}

export interface FuzzRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
  /** What was sent, for a failure report (bodies cut short). */
  summary: string;
}

/** Values that exist in the tenant under test, per path parameter or property name, so requests reach the handlers. */
export type KnownValues = Record<string, string[]>;

export interface Credentials {
  admin: string;
  usage: string;
  operator: string;
}

export function operationsOf(doc: OpenApiDocument): Operation[] {
  return Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, op]) => ({
      method: method.toUpperCase(),
      path,
      pathParams: (op.parameters ?? []).filter((p) => p.in === 'path').map((p) => p.name),
      query: (op.parameters ?? []).filter((p) => p.in === 'query').map((p) => ({ name: p.name, schema: p.schema ?? {} })),
      body: op.requestBody?.content['application/json']?.schema,
    })),
  );
}

const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((unit) => String.fromCharCode(unit));

/** One character of hostile text: any code point, control characters (NUL included) and unpaired surrogates. */
const hostileChar = fc.oneof(
  { weight: 6, arbitrary: fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 1 }) },
  { weight: 3, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary-ascii', minLength: 1, maxLength: 1 }) },
  { weight: 1, arbitrary: fc.constant('\u0000') },
  { weight: 1, arbitrary: loneSurrogate },
);

const attackStrings = fc.constantFrom(
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\ud800',
  'x\udfffy',
  '😀',
  '..',
  '../../etc/passwd',
  '%00',
  '\r\nX-Injected: yes',
  "' OR 1=1 --",
  '<script>alert(1)</script>',
  '{{#each this}}{{/each}}',
  '{{> partial}}',
  '__proto__',
  'constructor',
  'toString',
  'hasOwnProperty',
  'null',
  '-1',
  '1e309',
  'xn--',
  'a'.repeat(1000),
);

const shortHostileText = fc.oneof(
  { weight: 2, arbitrary: fc.string({ unit: hostileChar, maxLength: 24 }) },
  { weight: 1, arbitrary: attackStrings },
);

/** Strings from everywhere: short hostile text, known attack strings, now and then a very long one. */
const hostileText: fc.Arbitrary<string> = fc.oneof(
  { weight: 40, arbitrary: shortHostileText },
  { weight: 1, arbitrary: fc.constantFrom(64 * 1024, 1024 * 1024).map((n) => 'x'.repeat(n)) },
);

/** encodeURIComponent, except that an unpaired surrogate is written as the bytes a naive encoder makes of it. */
function percentEncode(text: string): string {
  let out = '';
  for (const char of text) {
    const unit = char.charCodeAt(0);
    if (char.length === 1 && unit >= 0xd800 && unit <= 0xdfff) {
      const bytes = [0xe0 | (unit >> 12), 0x80 | ((unit >> 6) & 0x3f), 0x80 | (unit & 0x3f)];
      out += bytes.map((b) => `%${b.toString(16).toUpperCase()}`).join('');
    } else out += encodeURIComponent(char);
  }
  return out;
}

/** A path segment or query value as it goes on the wire. */
function urlPart(known: string[]): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 4, arbitrary: (known.length ? fc.constantFrom(...known) : shortHostileText).map(percentEncode) },
    { weight: 3, arbitrary: shortHostileText.map(percentEncode) },
    {
      weight: 3,
      arbitrary: fc.constantFrom(
        '%00',
        'abc%00def',
        '%ff',
        '%ED%A0%80',
        '%C0%80',
        '%',
        '%zz',
        '..',
        '.',
        '%2e%2e',
        '%2F',
        'a%2Fb',
        '+',
        '%u0000',
      ),
    },
    { weight: 1, arbitrary: fc.constantFrom(300, 3000, 9000).map((n) => 'a'.repeat(n)) },
  );
}

const strangeNumbers = fc.constantFrom(0, -1, 1.5, 2 ** 31, -(2 ** 31) - 1, 2 ** 53 + 2, 1e308, -1e308, 5e-324);

/**
 * A JSON value for a schema: mostly of the schema's shape (with known and hostile strings), sometimes any JSON
 * at all (wrong types), sometimes with an unknown property added.
 */
function valueFor(
  schema: Schema | undefined,
  schemas: Record<string, Schema>,
  known: KnownValues,
  name = '',
  depth = 0,
): fc.Arbitrary<unknown> {
  if (!schema || depth > 6) return fc.jsonValue({ maxDepth: 2 });
  if (schema.$ref) return valueFor(schemas[schema.$ref.split('/').pop() as string], schemas, known, name, depth);
  const offSchema = fc.oneof(fc.jsonValue({ maxDepth: 3 }), hostileText, strangeNumbers);
  return fc.oneof({ weight: 8, arbitrary: shaped(schema, schemas, known, name, depth) }, { weight: 1, arbitrary: offSchema });
}

function shaped(schema: Schema, schemas: Record<string, Schema>, known: KnownValues, name: string, depth: number): fc.Arbitrary<unknown> {
  if (schema.oneOf) return fc.oneof(...schema.oneOf.map((s) => valueFor(s, schemas, known, name, depth + 1)));
  if (schema.enum) return fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...schema.enum) }, { weight: 1, arbitrary: hostileText });
  const hints = [...(known[name] ?? []), ...(typeof schema.example === 'string' ? [schema.example] : [])];
  switch (schema.type) {
    case 'string':
      return hints.length
        ? fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...hints) }, { weight: 2, arbitrary: hostileText })
        : hostileText;
    case 'number':
    case 'integer':
      return fc.oneof(fc.integer({ min: -10, max: 2000 }), strangeNumbers, fc.double());
    case 'boolean':
      return fc.boolean();
    case 'array':
      return fc.array(valueFor(schema.items, schemas, known, name, depth + 1), { maxLength: 4 });
    case 'object':
    case undefined: {
      if (schema.properties) {
        const model = Object.fromEntries(
          Object.entries(schema.properties).map(([key, s]) => [key, valueFor(s, schemas, known, key, depth + 1)]),
        );
        const record = fc.record(model, { requiredKeys: [] });
        const extra = fc.dictionary(shortHostileText, fc.jsonValue({ maxDepth: 1 }), { maxKeys: 2 });
        return fc.oneof(
          { weight: 6, arbitrary: record },
          { weight: 1, arbitrary: fc.tuple(record, extra).map(([r, e]) => ({ ...e, ...r })) },
          // An array where the object is expected: `[]`, `[{…}]`, `[[]]`.
          { weight: 1, arbitrary: fc.array(fc.oneof(record, fc.constant([])), { maxLength: 2 }) },
        );
      }
      if (schema.example !== undefined && schema.type === undefined) {
        return fc.oneof(fc.constant(schema.example), fc.jsonValue({ maxDepth: 2 }));
      }
      const values =
        typeof schema.additionalProperties === 'object'
          ? valueFor(schema.additionalProperties, schemas, known, '', depth + 1)
          : fc.jsonValue({ maxDepth: 2 });
      return fc.dictionary(shortHostileText, values, { maxKeys: 4 });
    }
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

type Key = string | number;

/** Every path into a JSON value, containers included (the root is the empty path). */
function pathsOf(value: unknown, prefix: Key[] = []): Key[][] {
  const here = [prefix];
  if (Array.isArray(value)) return [...here, ...value.flatMap((item, i) => pathsOf(item, [...prefix, i]))];
  if (value !== null && typeof value === 'object') {
    return [...here, ...Object.entries(value).flatMap(([key, child]) => pathsOf(child, [...prefix, key]))];
  }
  return here;
}

function valueAt(value: unknown, path: Key[]): unknown {
  return path.reduce<unknown>((at, key) => (at as Record<Key, unknown>)[key], value);
}

/** A copy of `value` with the value at `path` replaced (or removed, for `undefined`). */
function withValueAt(value: unknown, path: Key[], replacement: unknown): unknown {
  if (path.length === 0) return replacement;
  const [key, ...rest] = path;
  const copy: any = Array.isArray(value) ? [...value] : { ...(value as object) };
  const next = withValueAt(copy[key], rest, replacement);
  if (next === undefined) {
    if (Array.isArray(copy)) copy.splice(key as number, 1);
    else delete copy[key];
  } else copy[key] = next;
  return copy;
}

/**
 * A valid body with one thing wrong: a value anywhere replaced by hostile text, another type, an odd number
 * or null, wrapped in an array (an object of the body, or the body itself, given as a list), or removed;
 * sometimes left valid. Reaches the code behind validation that generated bodies rarely get to (a send that is
 * inserted, a template that is compiled).
 */
function mutationsOf(valid: unknown): fc.Arbitrary<unknown> {
  const paths = pathsOf(valid);
  const replacement = fc.oneof(
    { weight: 6, arbitrary: hostileText },
    { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
    { weight: 1, arbitrary: strangeNumbers },
    { weight: 1, arbitrary: fc.constantFrom(null, undefined, true, [], {}) },
  );
  const containers = paths.filter((path) => {
    const at = valueAt(valid, path);
    return at !== null && typeof at === 'object';
  });
  return fc.oneof(
    { weight: 1, arbitrary: fc.constant(valid) },
    { weight: 5, arbitrary: fc.tuple(fc.constantFrom(...paths), replacement).map(([path, v]) => withValueAt(valid, path, v)) },
    { weight: 2, arbitrary: fc.constantFrom(...containers).map((path) => withValueAt(valid, path, [valueAt(valid, path)])) },
  );
}

/** Deeply nested JSON as text: JSON.stringify itself overflows the stack at a few thousand levels. */
const deepJson = fc
  .tuple(fc.constantFrom(31, 32, 33, 40, 5000, 100_000), fc.boolean())
  .map(([levels, arrays]) =>
    arrays ? '['.repeat(levels) + ']'.repeat(levels) : '{"a":'.repeat(levels - 1) + '{}' + '}'.repeat(levels - 1),
  );

const DEEP = 'deep-nesting-goes-here-7c1e';

/** The value's leaves as url-encoded pairs, nested names in brackets (qs style). */
function urlencode(value: unknown, prefix = ''): string[] {
  if (value !== null && typeof value === 'object') {
    return Object.entries(value).flatMap(([key, child]) => urlencode(child, prefix ? `${prefix}[${key}]` : key));
  }
  return [`${percentEncode(prefix)}=${percentEncode(String(value))}`];
}

interface Payload {
  text: Buffer;
  contentType?: string;
  label: string;
}

function payloadFor(op: Operation, schemas: Record<string, Schema>, known: KnownValues, valid: unknown): fc.Arbitrary<Payload> {
  const generated = valueFor(op.body, schemas, known);
  const value = valid === undefined ? generated : fc.oneof(generated, mutationsOf(valid));
  const jsonType = fc.oneof(
    { weight: 12, arbitrary: fc.constant('application/json') },
    {
      weight: 3,
      arbitrary: fc.constantFrom(
        'application/json; charset=utf-8',
        'application/json; charset=utf-16',
        'application/json; charset=latin1',
        'application/json; charset=nope',
        'text/plain',
        'application/x-www-form-urlencoded',
        'multipart/form-data; boundary=x',
        'application/vnd.api+json',
      ),
    },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );
  const json = fc
    .tuple(value, jsonType)
    .map(([v, contentType]) => ({ text: Buffer.from(JSON.stringify(v) ?? ''), contentType, label: 'json' }));
  const deep = fc.tuple(value, deepJson, shortHostileText).map(([v, nested, key]) => {
    const holder = v !== null && typeof v === 'object' && !Array.isArray(v) ? { ...v, [key]: DEEP } : { [key]: DEEP };
    return { text: Buffer.from(JSON.stringify(holder).replace(`"${DEEP}"`, nested)), contentType: 'application/json', label: 'deep json' };
  });
  const form = fc.tuple(value, fc.nat({ max: 40 })).map(([v, extraDepth]) => {
    const pairs = urlencode(v);
    if (extraDepth > 25) pairs.push(`deep${'[a]'.repeat(extraDepth)}=1`);
    return { text: Buffer.from(pairs.join('&')), contentType: 'application/x-www-form-urlencoded', label: 'url-encoded' };
  });
  const garbage = fc.string({ unit: hostileChar, maxLength: 60 }).map((text) => ({
    text: Buffer.from(text),
    contentType: 'application/json',
    label: 'garbage',
  }));
  return fc.oneof(
    { weight: 10, arbitrary: json },
    { weight: 2, arbitrary: deep },
    { weight: 2, arbitrary: form },
    { weight: 1, arbitrary: garbage },
  );
}

/** Content-Encoding: mostly none; valid gzip/deflate/br; a body that is not what its label says; unknown names. */
const encoding = fc.oneof(
  { weight: 12, arbitrary: fc.constant({ kind: 'identity' as const }) },
  { weight: 3, arbitrary: fc.constantFrom('gzip', 'deflate', 'br').map((name) => ({ kind: 'valid' as const, name })) },
  { weight: 2, arbitrary: fc.constantFrom('gzip', 'deflate', 'br').map((name) => ({ kind: 'corrupt' as const, name })) },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom('compress', 'zstd', 'x-snappy', 'gzip, br', 'identity, gzip')
      .map((name) => ({ kind: 'label' as const, name })),
  },
);

function encode(body: Buffer, how: { kind: string; name?: string }): { body: Buffer; header?: string } {
  if (how.kind === 'identity') return { body };
  if (how.kind !== 'valid') return { body, header: how.name };
  const compress = { gzip: gzipSync, deflate: deflateSync, br: brotliCompressSync }[how.name as 'gzip' | 'deflate' | 'br'];
  return { body: compress(body), header: how.name };
}

interface Auth {
  label: string;
  headers: Record<string, string>;
}

function authFor(credentials: Credentials): fc.Arbitrary<Auth> {
  const bearer = (key: string) => ({ Authorization: `Bearer ${key}` });
  return fc.oneof(
    { weight: 14, arbitrary: fc.constant({ label: 'tenant admin key', headers: bearer(credentials.admin) }) },
    { weight: 2, arbitrary: fc.constant({ label: 'tenant admin key in X-Api-Key', headers: { 'X-Api-Key': credentials.admin } }) },
    { weight: 2, arbitrary: fc.constant({ label: 'tenant usage key', headers: bearer(credentials.usage) }) },
    { weight: 1, arbitrary: fc.constant({ label: 'operator key', headers: bearer(credentials.operator) }) },
    { weight: 1, arbitrary: fc.constant({ label: 'no credential', headers: {} }) },
    {
      weight: 2,
      arbitrary: fc.constantFrom<Auth>(
        { label: 'malformed bearer', headers: { Authorization: 'Bearer nope' } },
        { label: 'unknown well-formed key', headers: bearer(`svc_sk_admin_${'0'.repeat(64)}`) },
        { label: 'basic auth', headers: { Authorization: 'Basic Zm9vOmJhcg==' } },
        { label: 'public token header with an admin key', headers: { 'X-Public-Token': credentials.admin } },
        { label: 'empty bearer', headers: { Authorization: 'Bearer ' } },
      ),
    },
  );
}

/**
 * Every kind of request to one operation: its path parameters, query, body (generated from the schema, or a
 * valid body made wrong in one place), content type, encoding and credential.
 */
export function requestsFor(
  op: Operation,
  schemas: Record<string, Schema>,
  known: KnownValues,
  credentials: Credentials,
  validBody?: unknown,
): fc.Arbitrary<FuzzRequest> {
  const params = fc.tuple(...op.pathParams.map((name) => urlPart(known[name] ?? [])));
  const declared = op.query.map(({ name }) => fc.option(fc.tuple(fc.constant(name), urlPart(known[name] ?? [])), { nil: undefined }));
  const extraQuery = fc.option(fc.tuple(fc.string({ unit: 'grapheme-ascii', maxLength: 8 }).map(percentEncode), urlPart([])), {
    nil: undefined,
  });
  const query = fc.tuple(fc.tuple(...declared), extraQuery, fc.boolean());
  const payload = fc.option(payloadFor(op, schemas, known, validBody), { nil: undefined, freq: op.body ? 10 : 2 });
  const idempotencyKey = fc.option(fc.string({ unit: 'grapheme-ascii', maxLength: 300 }), { nil: undefined, freq: 4 });

  const parts = fc.record({ params, query, payload, encoding, auth: authFor(credentials), idempotencyKey });
  return parts.map(({ params, query, payload, encoding: how, auth, idempotencyKey }) => {
    let i = 0;
    const path = op.path.replace(/\{[^}]+\}/g, () => params[i++]);
    const [declaredPairs, extra, repeat] = query;
    const pairs = [...declaredPairs, extra].filter((pair): pair is [string, string] => pair !== undefined);
    if (repeat && pairs.length > 0) pairs.push(pairs[0]); // the same name twice: an array where a string is expected
    const url = pairs.length ? `${path}?${pairs.map(([k, v]) => `${k}=${v}`).join('&')}` : path;

    const headers: Record<string, string> = { ...auth.headers };
    if (idempotencyKey !== undefined) headers['Idempotency-Key'] = idempotencyKey;
    let body: Buffer | undefined;
    if (payload) {
      const encoded = encode(payload.text, how);
      body = encoded.body;
      if (encoded.header) headers['Content-Encoding'] = encoded.header;
      if (payload.contentType) headers['Content-Type'] = payload.contentType;
    }
    const bodyText = payload ? payload.text.toString('utf8') : '';
    const summary = [
      `${op.method} ${url.length > 300 ? `${url.slice(0, 300)}… (${url.length} chars)` : url}`,
      `credential: ${auth.label}`,
      ...(payload && how.kind === 'corrupt' ? ['(the body is not compressed as its Content-Encoding says)'] : []),
      ...Object.entries(headers)
        .filter(([name]) => !['Authorization', 'X-Api-Key', 'X-Public-Token'].includes(name))
        .map(([name, value]) => `${name}: ${value.slice(0, 100)}`),
      payload ? `body (${payload.label}, ${bodyText.length} chars): ${JSON.stringify(bodyText.slice(0, 400))}` : 'no body',
    ].join('\n  ');
    // fast-check prints counterexamples with this, instead of a 9,000-character path and the raw body bytes.
    return { method: op.method, path: url, headers, body, summary, [fc.toStringMethod]: () => summary };
  });
}
