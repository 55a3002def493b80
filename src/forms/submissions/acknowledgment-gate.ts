import { Injectable, Logger } from '@nestjs/common';
import { sha256Hex } from '../../common/crypto/sha256';
import { normalizeEmailAddress } from '../../common/email-address';
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
    const key = this.redis.key('forms', 'ack', formId, sha256Hex(normalizeEmailAddress(address)));
    const claim = await this.redis.claim(key, ACKNOWLEDGMENT_INTERVAL_MS, CHECK_TIMEOUT_MS);
    if (claim.state === 'taken') return null;
    if (claim.state === 'unknown') {
      this.logger.warn(`Acknowledgment sent unchecked: ${claim.reason}`);
      return UNCHECKED;
    }
    // A later claim (this one cannot have expired yet) is never undone.
    return {
      giveBack: () => claim.release().catch((err: Error) => this.logger.warn(`Acknowledgment claim not given back: ${err.message}`)),
    };
  }
}
