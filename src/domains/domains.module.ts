import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Domain } from './domain.entity';
import { DomainsService } from './domains.service';
import { DnsVerifier } from './dns-verifier';

/** Domains, their DNS checks and DKIM keys. The /domains routes show each domain with its forms: forms/domains/. */
@Module({
  imports: [TypeOrmModule.forFeature([Domain])],
  providers: [DomainsService, DnsVerifier],
  exports: [DomainsService],
})
export class DomainsModule {}
