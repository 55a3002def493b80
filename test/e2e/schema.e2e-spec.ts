import { DataSource } from 'typeorm';
import { databaseOptions } from '../../src/database/database.options';
import { cloneTemplateDatabase, databaseUrl, dropDatabase } from '../support/test-env';

// The migrations and the entities describe the same schema: generating a migration now would add nothing.
describe('database schema', () => {
  it('has no drift between migrations and entities', async () => {
    // A copy, so that no connection to the template blocks other suites from cloning it.
    const name = await cloneTemplateDatabase();
    const dataSource = new DataSource(databaseOptions(databaseUrl(name)));
    await dataSource.initialize();
    try {
      const sql = await dataSource.driver.createSchemaBuilder().log();
      expect(sql.upQueries.map((q) => q.query)).toEqual([]);
    } finally {
      await dataSource.destroy();
      await dropDatabase(name);
    }
  });
});
