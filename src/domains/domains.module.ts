import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { FormsModule } from '../forms/forms.module';
import { Domain } from './domain.entity';
import { DomainsController } from './domains.controller';
import { DomainsService } from './domains.service';
import { DnsVerifier } from './dns-verifier';

@Module({
  imports: [TypeOrmModule.forFeature([Domain]), FormsModule],
  controllers: [DomainsController],
  providers: [DomainsService, DnsVerifier],
  exports: [DomainsService],
})
export class DomainsModule {}
