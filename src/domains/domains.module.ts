import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Domain } from './domain.entity';
import { DomainsService } from './domains.service';
import { DnsVerifier } from './dns-verifier';
import { DomainChanges } from './domain-changes';

/** Domains, their DNS checks and DKIM keys. The /domains routes show each domain with its forms: forms/domains/. */
@Module({
  imports: [TypeOrmModule.forFeature([Domain])],
  providers: [DomainsService, DnsVerifier, DomainChanges],
  exports: [DomainsService, DomainChanges],
})
export class DomainsModule {}
