import 'reflect-metadata';
import { ensureDatabase, runMigrations } from '../../src/database/database.options';
import { databaseUrl, shortRandom, templateDatabase } from './test-env';

/** Once per run: a template database with every migration applied; each e2e file clones it. */
export default async function globalSetup(): Promise<void> {
  const runId = `${Date.now().toString(36)}${shortRandom()}`;
  process.env.MAILROOM_TEST_RUN = runId;
  const url = databaseUrl(templateDatabase(runId));
  await ensureDatabase(url);
  await runMigrations(url);
}
