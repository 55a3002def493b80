import { DynamicModule, Module } from '@nestjs/common';
import { AppConfigService } from '../config/app-config.service';
import { EmailModule } from '../email/email.module';

/** Mailing lists, their subscribers, and list sends fanned out through the `list-sends` queue. */
@Module({})
export class ListsModule {
  static register(config: AppConfigService): DynamicModule {
    return {
      module: ListsModule,
      imports: [EmailModule.register(config)],
      controllers: [],
      providers: [],
    };
  }
}
