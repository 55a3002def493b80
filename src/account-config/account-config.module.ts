import { Module } from '@nestjs/common';
import { CollectionsModule } from '../collections/collections.module';
import { DomainsModule } from '../domains/domains.module';
import { ProjectsModule } from '../projects/projects.module';
import { QuotasModule } from '../quotas/quotas.module';
import { TemplatesModule } from '../templates/templates.module';
import { AccountConfigController } from './account-config.controller';
import { AccountConfigService } from './account-config.service';

/** The declarative configuration file: GET /config exports it, PUT /config plans and applies it (D-33). */
@Module({
  imports: [DomainsModule, CollectionsModule, ProjectsModule, TemplatesModule, QuotasModule],
  controllers: [AccountConfigController],
  providers: [AccountConfigService],
})
export class AccountConfigModule {}
