import { ensureDatabase, runMigrations } from '../database/database.options';
import { commandConfig } from './database-context';

/**
 * `mailroom migrate`: what a process does at start when MIGRATIONS_RUN is on (the database created if missing, the
 * pending migrations run under the same advisory lock), as a step of its own. Answers the names applied.
 */
export async function migrate(): Promise<string[]> {
  const config = await commandConfig(['postgres']);
  await ensureDatabase(config.env.DATABASE_URL);
  return runMigrations(config.env.DATABASE_URL);
}
