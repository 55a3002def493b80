import { createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { clientIpKey } from '../rate-limits/rate-limit.policy';
import { RateLimitService } from '../rate-limits/rate-limit.service';
import { HOUR_MS, LimitRule, LimitState } from '../rate-limits/rate-limit.types';
import { AppConfigService } from '../config/app-config.service';
import { RedisService } from '../redis/redis.service';
import { InboundRefusal } from './inbound-refusal';

/** One message for one forwarding domain, as RCPT TO shows it. */
export interface InboundMessageKey {
  /** MAIL FROM; '' for a bounce. */
  sender: string;
  clientAddress: string;
  /** The forwarding domain (lower-cased). */
  domain: string;
}

export interface InboundLimits {
  /** Messages from one sender (envelope sender and client network) to one domain an hour; 0: none. */
  perSenderPerHour: number;
  /** Messages to one domain an hour, from everyone; 0: none. */
  perDomainPerHour: number;
}

/**
 * The hourly limits a message for `message.domain` falls under. The sender's counter is per forwarding domain, so that
 * a sender that writes to many customers (a notification service) has an allowance at each; and per client network,
 * so that mail forged in a real sender's name cannot use up that sender's allowance. Bounces are not counted per
 * sender: they answer mail sent from here.
 */
export function inboundLimitRules(
  message: InboundMessageKey,
  limits: InboundLimits,
  redisKey: (...parts: string[]) => string,
): LimitRule[] {
  const rules: LimitRule[] = [];
  if (limits.perSenderPerHour > 0 && message.sender !== '') {
    const sender = createHash('sha256').update(message.sender.toLowerCase()).digest('base64url').slice(0, 22);
    rules.push({
      scope: 'smtp-sender',
      window: 'hour',
      kind: 'window',
      key: redisKey('rl', 'smtp-sender', message.domain, clientIpKey(message.clientAddress), sender),
      limit: limits.perSenderPerHour,
      windowMs: HOUR_MS,
    });
  }
  if (limits.perDomainPerHour > 0) {
    rules.push({
      scope: 'smtp-domain',
      window: 'hour',
      kind: 'window',
      key: redisKey('rl', 'smtp-domain', message.domain),
      limit: limits.perDomainPerHour,
      windowMs: HOUR_MS,
    });
  }
  return rules;
}

/** The 451 for a message a limit refused: which limit, and when one more would pass. */
export function inboundLimitRefusal(states: readonly LimitState[], message: InboundMessageKey): InboundRefusal {
  const refusing = states.filter((s) => s.retryAfterMs > 0).sort((a, b) => b.retryAfterMs - a.retryAfterMs)[0] ?? states[0];
  const minutes = Math.max(1, Math.ceil(refusing.retryAfterMs / 60_000));
  const what =
    refusing.rule.scope === 'smtp-sender'
      ? `Too many messages from <${message.sender}> to ${message.domain}: the limit is ${refusing.rule.limit} an hour`
      : `Too many messages for ${message.domain}: the limit is ${refusing.rule.limit} an hour`;
  return new InboundRefusal(451, `4.7.1 ${what}, try again in ${minutes} min`);
}

/**
 * The inbound server's hourly limits per sender and per forwarding domain (INBOUND_SMTP_MAX_MESSAGES_PER_*_PER_HOUR),
 * kept by the limiter in Redis shared by every worker (while it is away, in memory at RATE_LIMIT_FALLBACK_SHARE: mail
 * is still taken). A message is checked at RCPT TO and counted once it is committed, so that a transaction that never
 * sends its DATA, or whose message is refused, spends nothing; transactions in flight at once may each pass the check,
 * so a burst can overshoot a limit by the number of concurrent transactions.
 */
@Injectable()
export class InboundRateLimits {
  private readonly limits: InboundLimits;

  constructor(
    private readonly limiter: RateLimitService,
    private readonly redis: RedisService,
    config: AppConfigService,
  ) {
    this.limits = {
      perSenderPerHour: config.env.INBOUND_SMTP_MAX_MESSAGES_PER_SENDER_PER_HOUR,
      perDomainPerHour: config.env.INBOUND_SMTP_MAX_MESSAGES_PER_DOMAIN_PER_HOUR,
    };
  }

  /** Throws the 451 when one more message would go past a limit it falls under; counts nothing. */
  async check(message: InboundMessageKey): Promise<void> {
    const rules = this.rulesOf(message);
    if (rules.length === 0) return;
    const decision = await this.limiter.check(rules);
    if (!decision.allowed) throw inboundLimitRefusal(decision.states, message);
  }

  /** Counts a committed message once for each of its forwarding domains, past a limit too (it was taken). */
  async count(messages: readonly InboundMessageKey[]): Promise<void> {
    const rules = messages.flatMap((message) => this.rulesOf(message));
    if (rules.length > 0) await this.limiter.count(rules);
  }

  private rulesOf(message: InboundMessageKey): LimitRule[] {
    return inboundLimitRules(message, this.limits, (...parts) => this.redis.key(...parts));
  }
}
