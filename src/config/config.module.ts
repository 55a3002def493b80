import { DynamicModule, Global, Module } from '@nestjs/common';
import { AppConfigService } from './app-config.service';

@Global()
@Module({})
export class ConfigModule {
  /** The configuration is validated before the app is built (main.ts), so a bad value stops start-up first. */
  static forRoot(config: AppConfigService): DynamicModule {
    return { module: ConfigModule, providers: [{ provide: AppConfigService, useValue: config }], exports: [AppConfigService] };
  }
}
