import { Injectable, Logger } from '@nestjs/common';
import { AppException } from '../common/errors/app.exception';
import { ErrorCode } from '../common/errors/error-code';
import { LateEvent, LateEventsRepository, ReferencedMessage } from '../outbox/late-events.repository';
import { SuppressionReason, SuppressionService } from '../suppression/suppression.service';
import { ProviderEventDto, ProviderEventsResultDto } from './dto/provider-events.dto';
import { bounceSuppresses, EVENT_EFFECTS, eventDetail, parseMessageReference, resolveRecipient } from './provider-event-rules';
import { ProviderWebhookIds } from './provider-webhook-ids.store';

const RETRY_AFTER_SECONDS = '5';

interface Suppression {
  accountId: string;
  email: string;
  reason: SuppressionReason;
  messageId: string;
}

/** An event to apply; a bounce report received by mail says itself whether its bounce suppresses (by its Status). */
export type AppliedEvent = ProviderEventDto & { suppresses?: boolean };

/**
 * Applies the provider's events (D-24) to messages of any account (the provider is ours, not a tenant's):
 * events on the message, status moves, suppression entries. The customers' webhooks follow from the events
 * (a database trigger). Each webhook-id is applied once (ProviderWebhookIds, in PostgreSQL: a Redis restart
 * cannot apply a retry twice; while PostgreSQL is away the call is answered 503 and the provider retries).
 */
@Injectable()
export class ProviderEventsService {
  private readonly logger = new Logger(ProviderEventsService.name);

  constructor(
    private readonly repository: LateEventsRepository,
    private readonly suppression: SuppressionService,
    private readonly webhookIds: ProviderWebhookIds,
  ) {}

  async receive(webhookId: string, events: ProviderEventDto[]): Promise<ProviderEventsResultDto> {
    const claim = await this.webhookIds.claim(webhookId);
    if (claim.state === 'applied') return { received: events.length, applied: 0, ignored: events.length, duplicate: true };
    if (claim.state === 'busy') {
      throw new AppException(ErrorCode.Conflict, 'A call with this webhook-id is being applied; retry shortly', undefined, {
        'Retry-After': RETRY_AFTER_SECONDS,
      });
    }
    let result: ProviderEventsResultDto;
    try {
      result = await this.apply(events);
    } catch (err) {
      // The provider's retry applies it (or, if PostgreSQL cannot take this either, once the claim lapses).
      await this.webhookIds.release(claim).catch(() => undefined);
      throw err;
    }
    await this.webhookIds
      .applied(claim)
      .catch((err: Error) => this.logger.warn(`Could not remember webhook-id ${webhookId} as applied: ${err.message}`));
    return result;
  }

  /** Applies events without the webhook-id check: a bounce report received by mail (D-31) comes here too. */
  async apply(events: AppliedEvent[]): Promise<ProviderEventsResultDto> {
    const references = events.map((e) => parseMessageReference(e.messageId));
    const found = await this.repository.findByReferences(
      references.flatMap((r) => ('id' in r ? [r.id] : [])),
      references.flatMap((r) => ('headerMessageId' in r ? [r.headerMessageId] : [])),
    );
    const byId = new Map(found.map((m) => [m.id, m]));
    const byHeader = new Map(found.map((m) => [m.headerMessageId, m]));

    const late: LateEvent[] = [];
    const everyRecipient: (LateEvent & { event: { recipient: string } })[] = [];
    const suppressions: Suppression[] = [];
    let ignored = 0;
    events.forEach((dto, i) => {
      const reference = references[i];
      const message: ReferencedMessage | undefined = 'id' in reference ? byId.get(reference.id) : byHeader.get(reference.headerMessageId);
      if (!message) {
        ignored++;
        this.logger.debug(`Ignored a ${dto.type} event of unknown message ${dto.messageId}`);
        return;
      }
      const resolved = resolveRecipient(dto.type, message.recipients, dto.recipient);
      if ('ignored' in resolved) {
        ignored++;
        this.logger.debug(`Ignored a ${dto.type} event of ${message.id}: ${resolved.ignored}`);
        return;
      }
      const { recipient } = resolved;
      const effect = EVENT_EFFECTS[dto.type];
      const event = {
        type: dto.type,
        recipient,
        detail: eventDetail(dto.type, dto.reason, dto.url),
        occurredAt: dto.timestamp === undefined ? undefined : new Date(dto.timestamp),
      };
      if (effect.everyRecipient && recipient !== null) {
        everyRecipient.push({ messageId: message.id, event: { ...event, recipient }, move: effect.move });
      } else {
        late.push({ messageId: message.id, event, move: effect.move });
      }
      if (effect.suppress && recipient !== null) {
        if (dto.type !== 'bounced' || (dto.suppresses ?? bounceSuppresses(dto.reason))) {
          suppressions.push({ accountId: message.accountId, email: recipient, reason: effect.suppress, messageId: message.id });
        } else {
          this.logger.error(
            `${message.id} bounced at ${recipient} for a reason other than the address (${dto.reason ?? 'no reason given'}): ` +
              'not suppressed; a policy or content refusal usually means the relay, its configuration or the content is at fault',
          );
        }
      }
    });

    await this.repository.recordLateEvents(late);
    for (const entry of everyRecipient) await this.repository.recordEveryRecipientEvent(entry);
    for (const s of suppressions) {
      await this.suppression
        .add(s.accountId, s.email, s.reason, s.messageId)
        .catch((err: Error) =>
          this.logger.error(`Could not suppress ${s.email} (${s.reason}) after a provider event of ${s.messageId}: ${err.message}`),
        );
    }
    return { received: events.length, applied: events.length - ignored, ignored };
  }
}
