import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { normalizeEmailAddress } from '../common/email-address';
import { escapeHtml } from '../common/escape-html';
import { AppConfigService } from '../config/app-config.service';
import { type ComposedEmail, type Mailbox, OutboxService } from '../outbox/outbox.service';
import { RedisService } from '../redis/redis.service';
import type { TrackedMessageRecord } from './tracking.repository';
import { TrackingTokens } from './tracking-tokens';

/**
 * How long an address that was mailed its own link is not mailed it again for the same message: long enough that the
 * form of a link naming nobody cannot be used to flood a recipient, short enough that Redis forgets it eventually.
 */
const ONCE_PER_MS = 30 * 24 * 3600_000;
/** Redis gets this long to answer; without its answer nothing is mailed (the person can ask again). */
const CHECK_TIMEOUT_MS = 1000;

/** What the confirmation email needs: who it goes to, the link it carries and what the link unsubscribes from. */
export interface UnsubscribeConfirmation {
  recipient: string;
  link: string;
  /** The message's sender. */
  from: string;
  /** A list send's list name ('' once deleted); null for any other message. */
  list: string | null;
}

/** The email that gives a recipient of a message its own unsubscribe link, sent from FORMS_FROM (the operator). */
export function unsubscribeConfirmationEmail(confirmation: UnsubscribeConfirmation, operator: Mailbox): ComposedEmail {
  const { recipient, link, from, list } = confirmation;
  const what =
    list === null ? `emails sent by ${from}` : list ? `the mailing list “${list}” (sent by ${from})` : `a mailing list of ${from}`;
  const asked = `Someone asked to unsubscribe ${recipient} from ${what}, with the link of an email that went to several addresses.`;
  const ignore = 'If this was not you, ignore this email: nothing changes.';
  return {
    from: { name: operator.name || 'Mailroom', address: operator.address },
    systemSender: true,
    to: [recipient],
    subject: `Confirm unsubscribing from ${from}`.replace(/[\r\n]+/g, ' ').slice(0, 200),
    text: `${asked}\n\nTo unsubscribe, open this link and press the button:\n${link}\n\n${ignore}`,
    html:
      `<p>${escapeHtml(asked)}</p>` +
      `<p><a href="${escapeHtml(link)}" style="display:inline-block;padding:10px 18px;background:#1f2328;color:#fff;border-radius:6px;text-decoration:none">Unsubscribe</a></p>` +
      `<p>${escapeHtml(ignore)}</p>`,
  };
}

/**
 * An address typed on the page of an unsubscribe link naming nobody (mail sent before each recipient had its own link)
 * is not unsubscribed there: whoever holds such a link could name a co-recipient. When it was a recipient of the
 * message it is mailed its own link, at most once per message and address (ONCE_PER_MS, in Redis). This runs after
 * the answer, which is the same either way: neither it nor its timing tells who the message went to.
 */
@Injectable()
export class UnsubscribeConfirmations implements OnApplicationShutdown {
  private readonly logger = new Logger(UnsubscribeConfirmations.name);
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    private readonly tokens: TrackingTokens,
    private readonly outbox: OutboxService,
    private readonly redis: RedisService,
    private readonly config: AppConfigService,
  ) {}

  /** Starts mailing `address` its own link when it was a recipient of the message; never waits, never throws. */
  offer(message: TrackedMessageRecord, address: string, list: string | null): void {
    const sending = this.mailOwnLink(message, address, list)
      .catch((err: Error) => this.logger.warn(`Unsubscribe confirmation for ${message.id} not sent: ${err.message}`))
      .finally(() => this.inFlight.delete(sending));
    this.inFlight.add(sending);
  }

  /** Resolves once every offer made so far is done (at shutdown, and for tests). */
  async settled(): Promise<void> {
    await Promise.all(this.inFlight);
  }

  onApplicationShutdown(): Promise<void> {
    return this.settled();
  }

  private async mailOwnLink(message: TrackedMessageRecord, address: string, list: string | null): Promise<void> {
    const wanted = normalizeEmailAddress(address);
    const recipient = message.recipients.find((r) => normalizeEmailAddress(r) === wanted);
    if (!recipient) return;
    // The recipient's tag, not its address, in the key: Redis holds no addresses.
    const key = this.redis.key('unsubscribe', 'confirmation', message.id, this.tokens.recipientTag(message.id, recipient));
    const claim = await this.redis.claim(key, ONCE_PER_MS, CHECK_TIMEOUT_MS);
    if (claim.state === 'taken') return;
    if (claim.state === 'unknown') throw new Error(`no once-only check: ${claim.reason}`);
    try {
      const confirmation = { recipient, link: this.tokens.unsubscribeUrl(message.id, recipient), from: message.fromAddress, list };
      // Suppressed (already unsubscribed, or bouncing): compose drops it and nothing is sent.
      const email = await this.outbox.compose(message.accountId, unsubscribeConfirmationEmail(confirmation, this.config.formsFrom));
      // Not counted against the account's quota: the account did not ask for it.
      if (email) await this.outbox.accept({ messages: [email], metering: null });
    } catch (err) {
      await claim.release().catch(() => undefined);
      throw err;
    }
  }
}
