import fc from 'fast-check';
import { Client } from 'pg';
import { unstorableText } from '../../src/common/http/storable-text';
import { databaseUrl } from '../support/test-env';

const SEED = Number(process.env.FUZZ_SEED ?? 20_260_609);
const RUNS = Number(process.env.FUZZ_RUNS ?? 2000);

/** Code points of every kind, NUL and unpaired surrogates much more often than chance would give them. */
const anyChar = fc.oneof(
  fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
  fc.string({ unit: 'binary-ascii', minLength: 1, maxLength: 1 }),
  fc.constantFrom('\u0000', '\ud83d', '\ude00', '\ud83d\ude00', '\udbff\udfff', '\uffff'),
);
const text = fc.string({ unit: anyChar, maxLength: 12 });
const json = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, text, fc.integer(), fc.boolean(), fc.constant(null), tie('array'), tie('object')),
  array: fc.array(tie('value'), { maxLength: 4 }),
  object: fc.dictionary(text, tie('value'), { maxKeys: 4 }),
})).value;

/** JSON text with object keys sorted, to compare values jsonb gave back in its own key order. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : 1)))
      : v,
  );
}

/**
 * The validation step's idea of text PostgreSQL cannot store (storable-text.ts), checked against PostgreSQL
 * itself: a value is flagged exactly when `text` or `jsonb` refuses it or gives back something else.
 */
describe('unstorableText agrees with PostgreSQL', () => {
  const client = new Client({ connectionString: databaseUrl('postgres') });
  beforeAll(() => client.connect());
  afterAll(() => client.end());

  async function storedUnchanged(sql: string, param: string, expected: string): Promise<boolean> {
    try {
      const { rows } = await client.query(sql, [param]);
      return canonical(rows[0].v) === expected;
    } catch (err) {
      if (typeof (err as { code?: unknown }).code !== 'string' || !/^22/.test((err as { code: string }).code)) throw err;
      return false; // class 22: data exception (invalid byte sequence, unsupported Unicode escape, …)
    }
  }

  it('for strings, as text and as jsonb', async () => {
    await fc.assert(
      fc.asyncProperty(text, async (s) => {
        const asText = await storedUnchanged('SELECT $1::text AS v', s, canonical(s));
        const asJsonb = await storedUnchanged('SELECT $1::jsonb AS v', JSON.stringify(s), canonical(s));
        const storable = asText && asJsonb;
        expect(unstorableText(s, 'field').length === 0).toBe(storable);
      }),
      { seed: SEED, numRuns: RUNS / 4 },
    );
  });

  it('for JSON documents, keys included, as jsonb', async () => {
    await fc.assert(
      fc.asyncProperty(json, async (value) => {
        const storable = await storedUnchanged('SELECT $1::jsonb AS v', JSON.stringify(value), canonical(value));
        expect(unstorableText(value, '').length === 0).toBe(storable);
      }),
      { seed: SEED, numRuns: RUNS / 4 },
    );
  });
});
