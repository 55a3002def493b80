import { type INestApplicationContext, type ModuleMetadata, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppConfigService } from '../config/app-config.service';
import { ConfigModule } from '../config/config.module';
import { DatabaseModule } from '../database/database.module';
import { type StoreName, waitForStores } from '../startup/store-checks';

/** The server's configuration, once `stores` answer: a bad value or a store that does not is one line from the CLI. */
export async function commandConfig(stores: StoreName[]): Promise<AppConfigService> {
  const config = AppConfigService.fromEnv({ APP_ROLE: 'api' });
  await waitForStores(config, (message) => console.error(message), stores);
  return config;
}

/**
 * Runs `task` in a small Nest context of the server's configuration, its database and `imports`: the commands that
 * talk to the database directly (there is no API key yet, or the work is the operator's). A bad configuration or a
 * store that does not answer is one line from the CLI, as from the server.
 */
export async function withDatabaseContext<T>(
  imports: ModuleMetadata['imports'],
  stores: StoreName[],
  task: (app: INestApplicationContext, config: AppConfigService) => Promise<T>,
): Promise<T> {
  const config = await commandConfig(stores);
  @Module({ imports: [ConfigModule.forRoot(config), DatabaseModule, ...(imports ?? [])] })
  class CommandModule {}
  const app = await NestFactory.createApplicationContext(CommandModule, { logger: ['error', 'warn'] });
  try {
    return await task(app, config);
  } finally {
    await app.close();
  }
}
