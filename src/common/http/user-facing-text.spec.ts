import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { internalCitations } from '../../../test/support/internal-citations';

const ROOT = join(__dirname, '..', '..', '..');

/** What users read in the repository; docs/decisions.md is the one place that explains why, by decision id. */
const USER_DOCUMENTS = [
  'README.md',
  'deploy/README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((file) => file.endsWith('.md') && file !== 'decisions.md')
    .map((file) => `docs/${file}`),
];

// A user has none of the developers' documents: the README and the docs say each rule, not where it was decided.
describe('user-facing text', () => {
  it.each(USER_DOCUMENTS)('%s cites no decision id, issue number or spec', (file) => {
    expect(internalCitations(readFileSync(join(ROOT, file), 'utf8'))).toEqual([]);
  });
});
