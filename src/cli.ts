import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AccountsModule } from './accounts/accounts.module';
import { AccountsService } from './accounts/accounts.service';
import { AppConfigService, loadConfigOrExit } from './config/app-config.service';
import { ConfigModule } from './config/config.module';
import { DatabaseModule } from './database/database.module';
import { RedisModule } from './redis/redis.module';

const USAGE = `Usage: npm run cli -- <command>

Commands:
  bootstrap   Create the operator account if it does not exist and print a new operator admin key.
              The key is shown once; keep it safe.`;

function cliModule(config: AppConfigService) {
  @Module({ imports: [ConfigModule.forRoot(config), DatabaseModule, RedisModule, AccountsModule] })
  class CliModule {}
  return CliModule;
}

async function main(argv: string[]): Promise<number> {
  const [command] = argv;
  if (command !== 'bootstrap') {
    console.error(USAGE);
    return command === undefined || command === 'help' || command === '--help' ? 0 : 2;
  }
  const config = loadConfigOrExit({ APP_ROLE: 'api' });
  const app = await NestFactory.createApplicationContext(cliModule(config), { logger: ['error', 'warn'] });
  try {
    const key = await app.get(AccountsService).bootstrapOperator();
    console.error('Operator admin key (shown once; store it safely):');
    console.log(key);
    return 0;
  } finally {
    await app.close();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  },
);
