import { Module } from '@nestjs/common';
import { DomainsModule } from '../../domains/domains.module';
import { FormsModule } from '../forms.module';
import { DomainFormsService } from './domain-forms.service';
import { DomainsController } from './domains.controller';

/** The /domains routes: every answer shows a domain with its forms, and forms stand on domains, so they live here. */
@Module({
  imports: [DomainsModule, FormsModule],
  controllers: [DomainsController],
  providers: [DomainFormsService],
  exports: [DomainFormsService],
})
export class DomainFormsModule {}
