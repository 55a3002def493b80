import { InjectQueue } from '@nestjs/bull';
import { Injectable } from '@nestjs/common';
import { HealthCheckService, HealthIndicatorResult, HealthIndicatorService, TypeOrmHealthIndicator } from '@nestjs/terminus';
import type { Queue } from 'bull';
import { setTimeout as sleep } from 'node:timers/promises';
import { DataSource } from 'typeorm';
import { AppConfigService } from '../config/app-config.service';
import { ProviderHealth } from '../email/provider-health';
import { healthReason } from '../email/smtp-outcome';
import { QueueName } from '../queue/queue.constants';
import { RedisService } from '../redis/redis.service';
import { ShutdownState } from './shutdown-state';

const CHECK_TIMEOUT_MS = 2000;

export type CheckState = 'up' | 'down' | 'degraded';

/** 200 while the process should get traffic (`ok`, `degraded`), else 503. */
export function readinessStatusCode(readiness: Readiness): 200 | 503 {
  return readiness.status === 'ok' || readiness.status === 'degraded' ? 200 : 503;
}

export interface Readiness {
  /** `ok` (200), `degraded` (200: serving, but something deserves a look), `unavailable` or `shutting_down` (503). */
  status: 'ok' | 'degraded' | 'unavailable' | 'shutting_down';
  checks: Record<string, CheckState>;
  /** Each check's state with what it found (terminus' details). */
  details: HealthIndicatorResult;
}

/** Liveness and readiness (D-34), with @nestjs/terminus: the same answer on the API's /health/ready and a worker's. */
@Injectable()
export class HealthService {
  constructor(
    private readonly health: HealthCheckService,
    private readonly indicators: HealthIndicatorService,
    private readonly database: TypeOrmHealthIndicator,
    private readonly dataSource: DataSource,
    private readonly redis: RedisService,
    private readonly provider: ProviderHealth,
    private readonly config: AppConfigService,
    private readonly shutdown: ShutdownState,
    @InjectQueue(QueueName.Email) private readonly emailQueue: Queue,
  ) {}

  /**
   * PostgreSQL and Redis answer, the SMTP provider is not failing whole transactions, and queue workers run:
   * in a worker process its own; an API-only process reports `degraded` (still ready: accepted mail waits in
   * the queue) while no worker is connected.
   */
  async readiness(): Promise<Readiness> {
    const details = await this.health
      .check([
        () => this.database.pingCheck('postgres', { connection: this.dataSource, timeout: CHECK_TIMEOUT_MS }),
        () => this.redisCheck(),
        () => this.providerCheck(),
        () => this.workersCheck(),
      ])
      .then(
        (result) => result.details,
        (err: { getResponse?: () => { details?: HealthIndicatorResult } }) => {
          const details = err.getResponse?.().details;
          if (!details) throw err;
          return details;
        },
      );
    const checks = Object.fromEntries(Object.entries(details).map(([name, detail]) => [name, detail.status]));
    const states = Object.values(checks);
    const status = this.shutdown.requested
      ? 'shutting_down'
      : states.includes('down')
        ? 'unavailable'
        : states.includes('degraded')
          ? 'degraded'
          : 'ok';
    return { status, checks, details };
  }

  private async redisCheck(): Promise<HealthIndicatorResult<'redis'>> {
    const check = this.indicators.check('redis');
    return (await this.redis.ping()) ? check.up() : check.down({ message: 'Redis does not answer PING' });
  }

  private async providerCheck(): Promise<HealthIndicatorResult<'provider'>> {
    const check = this.indicators.check('provider');
    const { state, reason } = await this.provider.failure();
    if (state === 'up') return check.up();
    return check.down({
      message: 'The SMTP provider fails whole transactions or refuses our mail (relaying denied, sending paused)',
      // Public: the answer without addresses (stored so already; a line written by an older version is not).
      ...(reason ? { reason: healthReason(reason) } : {}),
    });
  }

  private async workersCheck(): Promise<HealthIndicatorResult<'workers'>> {
    const check = this.indicators.check('workers');
    const connected = await this.connectedWorkers();
    if (this.config.runsWorkers) return check.up({ connected });
    return connected > 0
      ? check.up({ connected })
      : check.degraded({ connected, message: 'No queue worker is connected: accepted messages wait in the queue' });
  }

  /** Bull's named Redis clients of the email queue; 0 when Redis does not answer in time (Bull would wait for it). */
  private async connectedWorkers(): Promise<number> {
    const deadline = new AbortController();
    const workers = await Promise.race([
      this.emailQueue.getWorkers().catch(() => []),
      sleep(CHECK_TIMEOUT_MS, [], { signal: deadline.signal }).catch(() => []),
    ]);
    deadline.abort();
    return (workers ?? []).length;
  }
}
