import { Injectable, Logger } from '@nestjs/common';
import { AppConfigService } from '../config/app-config.service';
import { RedisService } from '../redis/redis.service';
import { clientOf, Hit } from './machine-hits';

/** Redis gets this long to answer before the open is counted unchecked. */
const CHECK_TIMEOUT_MS = 250;

/** The right to count one open; given back when it could not be recorded, so that the client's retry counts. */
export interface OpenClaim {
  giveBack(): Promise<void>;
}

const UNCHECKED: OpenClaim = { giveBack: () => Promise.resolve() };

/**
 * One open per message, client and TRACKING_REPEAT_OPEN_WINDOW_MS: a mail client fetches the pixel again each time
 * the message is shown, and each fetch would be an event, an outbox row and a webhook delivery per subscriber.
 * Machine and human opens are counted apart, so that a person reading right after their client's prefetch counts.
 */
@Injectable()
export class RepeatedOpens {
  private readonly logger = new Logger(RepeatedOpens.name);
  private readonly windowMs: number;

  constructor(
    private readonly redis: RedisService,
    config: AppConfigService,
  ) {
    this.windowMs = config.env.TRACKING_REPEAT_OPEN_WINDOW_MS;
  }

  /**
   * The claim of this open, or null when the same client's open of the message was counted within the window.
   * When Redis fails or does not answer quickly the open counts: twice is better than not at all.
   */
  async claim(messageId: string, hit: Hit, machine: boolean): Promise<OpenClaim | null> {
    if (this.windowMs === 0) return UNCHECKED;
    const key = this.redis.key('tracking', 'open', messageId, machine ? 'machine' : 'person', clientOf(hit));
    const claim = await this.redis.claim(key, this.windowMs, CHECK_TIMEOUT_MS);
    if (claim.state === 'taken') return null;
    if (claim.state === 'unknown') {
      this.logger.warn(`Open counted without the repeat check: ${claim.reason}`);
      return UNCHECKED;
    }
    return { giveBack: () => claim.release().catch((err: Error) => this.logger.warn(`Open claim not given back: ${err.message}`)) };
  }
}
