import { Module } from '@nestjs/common';
import { DomainsModule } from '../domains/domains.module';
import { CollectionsModule } from '../forms/collections/collections.module';
import { DomainFormsModule } from '../forms/domains/domain-forms.module';
import { ProjectsModule } from '../projects/projects.module';
import { QuotasModule } from '../quotas/quotas.module';
import { TemplatesModule } from '../templates/templates.module';
import { AccountConfigController } from './account-config.controller';
import { AccountConfigService } from './account-config.service';

/** The declarative configuration file: GET /config exports it, PUT /config plans and applies it (D-33). */
@Module({
  imports: [DomainsModule, DomainFormsModule, CollectionsModule, ProjectsModule, TemplatesModule, QuotasModule],
  controllers: [AccountConfigController],
  providers: [AccountConfigService],
})
export class AccountConfigModule {}
