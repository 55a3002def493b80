import { Module } from '@nestjs/common';
import { ProviderHealth } from './provider-health';

/** The SMTP provider's shared state: written by the email workers, read by /health/ready on every instance. */
@Module({ providers: [ProviderHealth], exports: [ProviderHealth] })
export class ProviderHealthModule {}
