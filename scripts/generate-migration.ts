import 'reflect-metadata';
import { execFileSync } from 'node:child_process';
import { Client } from 'pg';
import { runMigrations } from '../src/database/database.options';

/**
 * `npm run migration:generate -- Name`: applies the existing migrations to a scratch database, then lets
 * TypeORM write src/database/migrations/<epoch>-Name.ts with whatever the entities add.
 */
async function main(): Promise<void> {
  const name = process.argv[2];
  if (!name || !/^[A-Z][A-Za-z]+$/.test(name)) throw new Error('usage: npm run migration:generate -- PascalVerbNoun');
  const server = process.env.MIGRATION_DATABASE_SERVER ?? 'postgres://postgres@127.0.0.1:5432';
  const scratch = `mailroom_migration_${process.pid}`;
  const admin = new Client({ connectionString: `${server}/postgres` });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${scratch}"`);
  try {
    const url = `${server}/${scratch}`;
    await runMigrations(url);
    execFileSync(
      process.execPath,
      [
        '-r',
        '@swc-node/register',
        'node_modules/typeorm/cli.js',
        '-d',
        'ormconfig.ts',
        'migration:generate',
        `src/database/migrations/${name}`,
      ],
      { stdio: 'inherit', env: { ...process.env, DATABASE_URL: url } },
    );
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS "${scratch}" WITH (FORCE)`);
    await admin.end();
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
