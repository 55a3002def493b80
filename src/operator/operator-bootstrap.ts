import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { AppConfigService } from '../config/app-config.service';
import { AccountsService } from './accounts.service';

/** On start: BOOTSTRAP_ADMIN_KEY (shape checked with the config) becomes an operator admin key (D-2), once per secret. */
@Injectable()
export class OperatorBootstrap implements OnApplicationBootstrap {
  constructor(
    private readonly accounts: AccountsService,
    private readonly config: AppConfigService,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const secret = this.config.env.BOOTSTRAP_ADMIN_KEY;
    if (secret && (await this.accounts.bootstrapOperator(secret))) {
      new Logger('Bootstrap').log('BOOTSTRAP_ADMIN_KEY added to the operator account');
    }
  }
}
