import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { validateEnv } from './src/config/env.schema';
import { databaseOptions } from './src/database/database.options';

/** The DataSource of the TypeORM CLI (`npm run typeorm -- migration:generate src/database/migrations/Name`). */
export default new DataSource(databaseOptions(validateEnv(process.env).DATABASE_URL));
