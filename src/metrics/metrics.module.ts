import { Global, Module } from '@nestjs/common';
import { MetricsService } from './metrics.service';
import { DatabasePoolMetrics } from './pool-metrics';

/** Prometheus metrics (prom-client): the text GET /metrics and a worker's probe server serve, and the database pool's gauges. */
@Global()
@Module({ providers: [MetricsService, DatabasePoolMetrics], exports: [MetricsService] })
export class MetricsModule {}
