import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { RedisService } from '../redis/redis.service';
import { healthReason } from './smtp-outcome';

/**
 * A failure no worker has seen again for this long is forgotten: the D-20 schedule retries at least hourly,
 * so an outage stays visible while messages wait for it; without workers, nobody can tell.
 */
const FAILURE_TTL_S = 3600;
/** A working provider clears the failure at most this often per instance (one DEL, not one per email). */
const CLEAR_INTERVAL_MS = 1000;

export type ProviderState = 'up' | 'down' | 'unknown';

/**
 * Whether the SMTP provider is failing whole transactions (a wrong SMTP password, a policy refusal at DATA, no
 * connection), shared through Redis so that every instance's /health/ready tells, API-only ones included.
 * Workers report each transaction's outcome; the first failure of an outage is logged at error level, once
 * for all workers; the next transaction the provider answers for its recipients ends the outage.
 */
@Injectable()
export class ProviderHealth implements OnApplicationShutdown {
  private readonly logger = new Logger(ProviderHealth.name);
  private readonly key: string;
  private clearTimer?: NodeJS.Timeout;
  private lastClear = 0;

  constructor(private readonly redis: RedisService) {
    this.key = redis.key('email', 'provider-failure');
  }

  /**
   * The provider failed a transaction as a whole, or refused all its recipients by policy (relaying denied: RCPT TO
   * answers that say it will not take our mail); resolves once recorded (never rejects). What every instance's public
   * /health/ready shows is the answer without its addresses (healthReason); the error log has it whole.
   */
  async failing(description: string, consequence = 'messages are deferred and retried, nobody is suppressed'): Promise<void> {
    clearTimeout(this.clearTimer);
    this.clearTimer = undefined;
    try {
      const previous = await this.redis.client.set(this.key, healthReason(description), 'EX', FAILURE_TTL_S, 'GET');
      if (previous === null) {
        this.logger.error(`The SMTP provider is failing (${description}): ${consequence}`);
      }
    } catch (err) {
      this.logger.warn(`Could not record the SMTP provider's failure: ${(err as Error).message}`);
    }
  }

  /** The provider answered for the recipients of a transaction. */
  working(): void {
    if (this.clearTimer) return;
    const wait = Math.max(0, this.lastClear + CLEAR_INTERVAL_MS - Date.now());
    this.clearTimer = setTimeout(() => {
      this.clearTimer = undefined;
      this.lastClear = Date.now();
      this.redis.client.del(this.key).then(
        (removed) => removed > 0 && this.logger.log('The SMTP provider takes messages again'),
        (err: Error) => this.logger.warn(`Could not clear the SMTP provider's failure: ${err.message}`),
      );
    }, wait);
  }

  /** As every instance sees it; `unknown` when Redis does not answer. */
  async state(): Promise<ProviderState> {
    return (await this.failure()).state;
  }

  /** The state, and while `down` the failure last seen (the provider's answer). */
  async failure(): Promise<{ state: ProviderState; reason?: string }> {
    try {
      const reason = await this.redis.client.get(this.key);
      return reason === null ? { state: 'up' } : { state: 'down', reason };
    } catch {
      return { state: 'unknown' };
    }
  }

  onApplicationShutdown(): void {
    clearTimeout(this.clearTimer);
  }
}
