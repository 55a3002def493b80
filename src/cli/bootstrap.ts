import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AccountsModule } from '../accounts/accounts.module';
import { AccountsService } from '../accounts/accounts.service';
import { AppConfigService, loadConfigOrExit } from '../config/app-config.service';
import { ConfigModule } from '../config/config.module';
import { DatabaseModule } from '../database/database.module';
import { RedisModule } from '../redis/redis.module';

function cliModule(config: AppConfigService) {
  @Module({ imports: [ConfigModule.forRoot(config), DatabaseModule, RedisModule, AccountsModule] })
  class CliModule {}
  return CliModule;
}

/**
 * Creates the operator account if there is none and answers a new operator admin key. Talks to the database
 * directly (the server's environment variables), as there is no key yet to call the API with.
 */
export async function bootstrapOperator(): Promise<string> {
  const config = loadConfigOrExit({ APP_ROLE: 'api' });
  const app = await NestFactory.createApplicationContext(cliModule(config), { logger: ['error', 'warn'] });
  try {
    const key = await app.get(AccountsService).bootstrapOperator();
    if (!key) throw new Error('No operator key was made');
    return key;
  } finally {
    await app.close();
  }
}
