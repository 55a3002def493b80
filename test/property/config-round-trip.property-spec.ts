import fc from 'fast-check';
import { AccountConfig, checkConfigFile, emptyConfig, toConfigFile } from '../../src/account-config/config-file';
import { mergeConfig, planChanges } from '../../src/account-config/config-plan';

/** Fixed in CI so a run is repeatable; FUZZ_SEED and FUZZ_RUNS explore further. */
const SEED = Number(process.env.FUZZ_SEED ?? 20_260_609);
const RUNS = Number(process.env.FUZZ_RUNS ?? 2000);

/** Any slug, often `constructor`: the one name Object.prototype has that a slug can be. */
const slug = fc.oneof(fc.stringMatching(/^[a-z0-9][a-z0-9_-]{0,6}$/), fc.constant('constructor'));
/** A name as the projects and collections APIs store it: one line, trimmed, not blank. */
const name = fc
  .string({ minLength: 1, maxLength: 12 })
  .map((text) => text.replace(/[\r\n]/g, ' ').trim())
  .filter((text) => text !== '');

/**
 * Any account's projects and collections: none, one or several projects, the file's project or none, each
 * collection in one of them or in none, with or without a form.
 */
const account: fc.Arbitrary<AccountConfig> = fc
  .dictionary(slug, name, { maxKeys: 5 })
  .chain((projects) => {
    const slugs = Object.keys(projects);
    const projectOf = slugs.length ? fc.option(fc.constantFrom(...slugs), { nil: null }) : fc.constant(null);
    const collection = fc.record({
      name,
      project: projectOf,
      forms: fc.option(fc.constant({ signup: { recipients: ['team@example.org'] } }), { nil: undefined }),
    });
    return fc.record({
      projects: fc.constant(projects),
      described: projectOf,
      collections: fc.dictionary(slug, collection, { maxKeys: 6 }),
    });
  })
  .map(({ projects, described, collections }) => ({
    ...emptyConfig(),
    project: described ? { slug: described, name: projects[described] } : null,
    projects,
    collections: Object.fromEntries(
      Object.entries(collections).map(([key, { name, project, forms }]) => [key, { name, project, forms: forms ?? {} }]),
    ),
  }));

describe('GET /config then PUT /config', () => {
  it('plans no change for the export of any account, with or without prune', () => {
    fc.assert(
      fc.property(account, fc.boolean(), (current, prune) => {
        const { config: file, errors } = checkConfigFile(JSON.parse(JSON.stringify(toConfigFile(current))));
        expect(errors).toEqual([]);
        expect(planChanges(current, mergeConfig(current, file, prune))).toEqual([]);
      }),
      { seed: SEED, numRuns: RUNS },
    );
  });
});
