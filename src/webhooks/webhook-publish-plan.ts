import { capPayload } from './webhook-thin-event';

export interface OutboxEvent {
  id: string;
  account_id: string;
  type: string;
  payload: Record<string, unknown>;
}

export interface Subscriber {
  id: string;
  account_id: string;
  events: string[];
}

export interface PlannedDelivery {
  id: string;
  account_id: string;
  webhook_id: string;
  event_id: string;
  event_type: string;
  payload: Record<string, unknown>;
}

/** The whole body of an event delivered thin, kept once for `GET /email/webhooks/events/{id}`. */
export interface FullEventBody {
  id: string;
  account_id: string;
  event_type: string;
  payload: Record<string, unknown>;
}

export interface PublishPlan {
  /** The events this batch publishes, in order; those after them wait for the next batch. */
  taken: OutboxEvent[];
  deliveries: PlannedDelivery[];
  fullBodies: FullEventBody[];
  /** Events were left for the next batch because of the byte budget. */
  cut: boolean;
}

export interface PublishOptions {
  /** WEBHOOK_MAX_PAYLOAD_BYTES: a larger body is sent thin. */
  maxPayloadBytes: number;
  /** The bytes of payloads (deliveries' and full bodies') one batch writes at most; its first event always goes. */
  budgetBytes: number;
  fullEventUrl: (eventId: string) => string;
  newEventId: () => string;
  newDeliveryId: () => string;
}

/**
 * The deliveries of a batch of outbox events: one per (event, subscribed webhook) under one event id per event, the
 * payload capped (thin above the cap, its whole body kept once). The events are taken in order while what they write
 * fits `budgetBytes` (each delivery's payload, each full body): the statements' parameters stay far below what one
 * string can hold, however large the events or however many webhooks subscribed to them.
 */
export function planPublishing(events: OutboxEvent[], subscribers: Subscriber[], options: PublishOptions): PublishPlan {
  const plan: PublishPlan = { taken: [], deliveries: [], fullBodies: [], cut: false };
  let bytes = 0;
  for (const event of events) {
    const targets = subscribers.filter((webhook) => webhook.account_id === event.account_id && webhook.events.includes(event.type));
    if (targets.length === 0) {
      plan.taken.push(event);
      continue;
    }
    const eventId = options.newEventId();
    const capped = capPayload(eventId, event.payload, options.maxPayloadBytes, options.fullEventUrl(eventId));
    const eventBytes = capped.bytes * targets.length + (capped.thin ? capped.fullBytes : 0);
    if (plan.deliveries.length > 0 && bytes + eventBytes > options.budgetBytes) {
      plan.cut = true;
      break;
    }
    bytes += eventBytes;
    plan.taken.push(event);
    if (capped.thin) plan.fullBodies.push({ id: eventId, account_id: event.account_id, event_type: event.type, payload: event.payload });
    for (const webhook of targets) {
      plan.deliveries.push({
        id: options.newDeliveryId(),
        account_id: event.account_id,
        webhook_id: webhook.id,
        event_id: eventId,
        event_type: event.type,
        payload: capped.payload,
      });
    }
  }
  return plan;
}
