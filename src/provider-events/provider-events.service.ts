import { Injectable, Logger } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { AppException } from '../common/errors/app.exception';
import { ErrorCode } from '../common/errors/error-code';
import { ReturnPaths } from '../email/return-path';
import { countStatusMoves, LateEvent, LateEventsRepository, ReferencedMessage } from '../outbox/late-events.repository';
import type { MessageStatus } from '../outbox/message.entity';
import { AddressBounce, SoftBounces } from '../suppression/soft-bounces';
import { NewSuppression, SuppressionService } from '../suppression/suppression.service';
import { ProviderEventDto, ProviderEventsResultDto } from './dto/provider-events.dto';
import {
  bounceSuppresses,
  bounceType,
  EVENT_EFFECTS,
  eventDetail,
  parseMessageReference,
  pickByHeader,
  resolveRecipient,
} from './provider-event-rules';
import { ProviderWebhookIds } from './provider-webhook-ids.store';

const RETRY_AFTER_SECONDS = '5';
/** A call waits this long at most for another holding its webhook-id or its messages, then is answered 409. */
const LOCK_TIMEOUT = '5s';
/** PostgreSQL's lock_not_available. */
const LOCK_NOT_AVAILABLE = '55P03';
/** PostgreSQL's deadlock_detected: the call was rolled back whole, so its retry is safe. */
const DEADLOCK_DETECTED = '40P01';

/**
 * An event to apply. A bounce report received by mail says itself whether its bounce suppresses (by its Status), and
 * whether its `delivered` only passed the message on (`relayed`: a DSN's Action relayed or expanded), not into the
 * recipient's mailbox.
 */
export type AppliedEvent = ProviderEventDto & { suppresses?: boolean; relayed?: boolean };

/** What applying a call comes to, before it commits. */
interface Plan {
  late: LateEvent[];
  everyRecipient: (LateEvent & { event: { recipient: string } })[];
  suppressions: NewSuppression[];
  softBounces: AddressBounce[];
  /** Addresses a message reached: their soft bounces count from zero again. */
  delivered: { accountId: string; email: string }[];
  /** Said once the call is committed (a call rolled back and retried says it once). */
  errors: string[];
  warnings: string[];
  ignored: number;
}

/**
 * Applies the provider's events (D-24) to messages of any account (the provider is ours, not a tenant's):
 * events on the message, status moves, suppression entries, soft-bounce counts. The customers' webhooks follow from
 * the events (a database trigger writes them to the outbox). A call is applied whole in one transaction, with its
 * webhook-id (ProviderWebhookIds): if any statement fails, nothing of it stays, and the provider's retry applies it
 * once; a retry of an applied call changes nothing.
 */
@Injectable()
export class ProviderEventsService {
  private readonly logger = new Logger(ProviderEventsService.name);

  constructor(
    private readonly dataSource: DataSource,
    private readonly repository: LateEventsRepository,
    private readonly suppression: SuppressionService,
    private readonly softBounces: SoftBounces,
    private readonly webhookIds: ProviderWebhookIds,
    private readonly returnPaths: ReturnPaths,
  ) {}

  receive(webhookId: string, events: ProviderEventDto[]): Promise<ProviderEventsResultDto> {
    return this.applyOnce(webhookId, events);
  }

  /**
   * Applies the events once per `key` (a provider's webhook-id; for a bounce report received by mail, the received
   * message's identity): the key, the events, their status moves, suppressions and webhook events commit together.
   */
  async applyOnce(key: string, events: AppliedEvent[]): Promise<ProviderEventsResultDto> {
    let plan: Plan | undefined;
    let moved: MessageStatus[] = [];
    try {
      const result = await this.dataSource.transaction(async (manager): Promise<ProviderEventsResultDto> => {
        await manager.query(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`);
        const claim = await this.webhookIds.claimWithin(manager, key);
        if (claim === 'applied') return { received: events.length, applied: 0, ignored: events.length, duplicate: true };
        if (claim === 'busy') throw busy();
        plan = await this.plan(manager, events);
        moved = await this.write(manager, plan);
        return { received: events.length, applied: events.length - plan.ignored, ignored: plan.ignored };
      });
      if (plan && !result.duplicate) {
        for (const line of plan.errors) this.logger.error(line);
        for (const line of plan.warnings) this.logger.warn(line);
      }
      countStatusMoves(moved);
      return result;
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === LOCK_NOT_AVAILABLE || code === DEADLOCK_DETECTED) throw busy();
      throw err;
    }
  }

  /** The messages the events are about, locked, and what each event does to its message. */
  private async plan(manager: EntityManager, events: AppliedEvent[]): Promise<Plan> {
    const references = events.map((e) => {
      const viaReturnPath = e.returnPath === undefined ? null : this.returnPaths.messageOf(e.returnPath.trim());
      if (viaReturnPath) return { id: viaReturnPath };
      return e.messageId === undefined ? null : parseMessageReference(e.messageId);
    });
    const found = await this.repository.findByReferences(
      manager,
      references.flatMap((r) => (r && 'id' in r ? [r.id] : [])),
      references.flatMap((r) => (r && 'headerMessageId' in r ? [r.headerMessageId] : [])),
    );
    const byId = new Map(found.map((m) => [m.id, m]));
    const byHeader = new Map<string, ReferencedMessage[]>();
    for (const m of found) byHeader.set(m.headerMessageId, [...(byHeader.get(m.headerMessageId) ?? []), m]);

    const plan: Plan = {
      late: [],
      everyRecipient: [],
      suppressions: [],
      softBounces: [],
      delivered: [],
      errors: [],
      warnings: [],
      ignored: 0,
    };
    const messages = events.map((dto, i) => {
      const reference = references[i];
      if (!reference) return { ignored: 'no message named' };
      if ('id' in reference) return byId.get(reference.id) ?? { ignored: `unknown message ${reference.id}` };
      return pickByHeader(byHeader.get(reference.headerMessageId) ?? [], dto.recipient);
    });
    // Locked in one order, so that calls about the same messages never deadlock, and a bounce of each recipient
    // sees the others' (recordEveryRecipientEvent).
    const ids = [...new Set(messages.flatMap((m) => ('id' in m ? [m.id] : [])))].sort();
    if (ids.length) await manager.query('SELECT 1 FROM messages WHERE id = ANY($1::varchar[]) ORDER BY id FOR UPDATE', [ids]);

    events.forEach((dto, i) => {
      const message = messages[i];
      // An ambiguous Message-ID is a provider (or its mapping) naming messages inexactly: worth a warning.
      if ('ignored' in message) return this.ignore(plan, `Ignored a ${dto.type} event: ${message.ignored}`, 'ambiguous' in message);
      const resolved = resolveRecipient(dto.type, message.recipients, dto.recipient);
      if ('ignored' in resolved) return this.ignore(plan, `Ignored a ${dto.type} event of ${message.id}: ${resolved.ignored}`);
      this.planEvent(plan, dto, message, resolved.recipient);
    });
    return plan;
  }

  private planEvent(plan: Plan, dto: AppliedEvent, message: ReferencedMessage, recipient: string | null): void {
    const effect = EVENT_EFFECTS[dto.type];
    const event = {
      type: dto.type,
      recipient,
      detail: eventDetail(dto.type, dto.reason, dto.url),
      occurredAt: dto.timestamp === undefined ? undefined : new Date(dto.timestamp),
    };
    if (effect.everyRecipient && recipient !== null) {
      plan.everyRecipient.push({ messageId: message.id, event: { ...event, recipient }, move: effect.move });
    } else {
      plan.late.push({ messageId: message.id, event, move: effect.move });
    }
    // Only the mailbox of a named recipient that took the message counts it reached: not a relay passing it on, not
    // every recipient of a message the event names none of.
    if (dto.type === 'delivered' && recipient !== null && !dto.relayed)
      plan.delivered.push({ accountId: message.accountId, email: recipient });
    if (!effect.suppress || recipient === null) return;
    const suppression = { accountId: message.accountId, email: recipient, reason: effect.suppress, source: message.id };
    if (dto.type !== 'bounced') {
      plan.suppressions.push(suppression);
    } else if (bounceType(dto.bounceType, dto.reason, dto.suppresses) === 'soft') {
      plan.softBounces.push({ accountId: message.accountId, email: recipient, messageId: message.id });
    } else if (dto.suppresses ?? bounceSuppresses(dto.reason)) {
      plan.suppressions.push(suppression);
    } else {
      plan.errors.push(
        `${message.id} bounced at ${recipient} for a reason other than the address (${dto.reason ?? 'no reason given'}): ` +
          'not suppressed; a policy or content refusal usually means the relay, its configuration or the content is at fault',
      );
    }
  }

  private ignore(plan: Plan, why: string, warn = false): void {
    plan.ignored++;
    if (warn) plan.warnings.push(why);
    else this.logger.debug(why);
  }

  /** Writes the plan; returns the statuses messages moved to, counted once the call commits. */
  private async write(manager: EntityManager, plan: Plan): Promise<MessageStatus[]> {
    const moved = await this.repository.recordLateEvents(plan.late, manager);
    for (const entry of plan.everyRecipient) {
      const status = await this.repository.recordEveryRecipientEvent(entry, manager);
      if (status) moved.push(status);
    }
    const reached = await this.softBounces.record(manager, plan.softBounces);
    const suppressions = [
      ...plan.suppressions,
      ...reached.map((b): NewSuppression => ({ accountId: b.accountId, email: b.email, reason: 'bounced', source: b.messageId })),
    ];
    await this.suppression.addWithin(manager, suppressions);
    // A suppressed address has nothing left to count; a delivered one starts again.
    await this.softBounces.reset(manager, [...plan.delivered, ...suppressions]);
    return moved;
  }
}

function busy(): AppException {
  return new AppException(ErrorCode.Conflict, 'A call with this webhook-id is being applied; retry shortly', undefined, {
    'Retry-After': RETRY_AFTER_SECONDS,
  });
}
