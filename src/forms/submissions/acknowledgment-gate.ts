import { createHash, randomBytes } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';
import { RedisService } from '../../redis/redis.service';

/** A form acknowledges one address at most once per this period. */
export const ACKNOWLEDGMENT_INTERVAL_MS = 3_600_000;
/** Redis gets this long to answer before the acknowledgment is sent unchecked. */
const CHECK_TIMEOUT_MS = 500;

/** The right to send one acknowledgment; given back when the submission it belongs to is not accepted. */
export interface AcknowledgmentClaim {
  giveBack(): Promise<void>;
}

const UNCHECKED: AcknowledgmentClaim = { giveBack: () => Promise.resolve() };

/**
 * One acknowledgment per form, submitter address and hour: whoever types someone else's address into a form
 * can make Mailroom write to that address once an hour, not once per post. The notification is not held back.
 */
@Injectable()
export class AcknowledgmentGate {
  private readonly logger = new Logger(AcknowledgmentGate.name);

  constructor(private readonly redis: RedisService) {}

  /**
   * The claim of the form's acknowledgment to this address, or null when one was claimed within the hour. When
   * Redis fails or does not answer quickly, the acknowledgment is sent unchecked: a post is never refused or
   * slowed for it, and one more acknowledgment is the lesser harm.
   */
  async claim(formId: string, address: string): Promise<AcknowledgmentClaim | null> {
    const key = this.redis.key('forms', 'ack', formId, createHash('sha256').update(address.trim().toLowerCase()).digest('hex'));
    const token = randomBytes(8).toString('hex');
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), CHECK_TIMEOUT_MS)));
    try {
      const answer = await Promise.race([this.redis.client.set(key, token, 'PX', ACKNOWLEDGMENT_INTERVAL_MS, 'NX'), timeout]);
      if (answer === 'timeout') {
        this.logger.warn('Acknowledgment sent unchecked: Redis did not answer');
        return UNCHECKED;
      }
      if (answer === null) return null;
      return { giveBack: () => this.giveBack(key, token) };
    } catch (err) {
      this.logger.warn(`Acknowledgment sent unchecked: ${(err as Error).message}`);
      return UNCHECKED;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Deletes the claim if it is still this one (it cannot have expired, but a later claim must not be undone). */
  private async giveBack(key: string, token: string): Promise<void> {
    await this.redis.client
      .eval(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`, 1, key, token)
      .catch((err: Error) => this.logger.warn(`Acknowledgment claim not given back: ${err.message}`));
  }
}
