import { Logger, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AppConfigService } from '../config/app-config.service';
import { databaseOptions, ensureDatabase, runMigrations } from './database.options';

@Module({
  imports: [
    TypeOrmModule.forRootAsync({
      inject: [AppConfigService],
      useFactory: async (config: AppConfigService) => {
        const url = config.env.DATABASE_URL;
        await ensureDatabase(url);
        if (config.env.MIGRATIONS_RUN) {
          const applied = await runMigrations(url);
          if (applied.length) new Logger('Database').log(`Applied migrations: ${applied.join(', ')}`);
        }
        return databaseOptions(url, config.env.DATABASE_READ_URL, config.databasePoolSize);
      },
    }),
  ],
})
export class DatabaseModule {}
