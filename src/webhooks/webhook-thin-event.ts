/** A thin event keeps the top-level fields that identify what happened: scalars up to this length, never objects or arrays. */
const MAX_IDENTIFYING_LENGTH = 200;

/** What a delivery carries for an event: the payload itself, or its thin stand-in when the body is over the cap. */
export interface CappedPayload {
  payload: Record<string, unknown>;
  /** The payload was too large: the full one is to be stored for the fetch URL. */
  thin: boolean;
  /** The bytes of the body sent (the thin one when thin). */
  bytes: number;
  /** The bytes of the whole event's body. */
  fullBytes: number;
}

/** The event a webhook receives: `id`, `type` and `timestamp` first, then the payload's fields (D-23). */
export function webhookEvent(eventId: string, payload: Record<string, unknown>): Record<string, unknown> {
  return { id: eventId, type: payload.type, timestamp: payload.timestamp, ...payload };
}

/** The event as the JSON sent, and measured against the cap: the one place it is built. */
export function webhookBody(eventId: string, payload: Record<string, unknown>): string {
  return JSON.stringify(webhookEvent(eventId, payload));
}

/**
 * The payload, or when its body would exceed `maxBytes` a thin one: `type`, `timestamp` and the short scalar fields
 * (ids such as `messageId`, `formId`, `submissionId`), `thin: true`, the size of the full body and the URL that
 * answers it. Should even those scalars make it too large, only `type` and `timestamp` stay beside the URL.
 */
export function capPayload(eventId: string, payload: Record<string, unknown>, maxBytes: number, fullEventUrl: string): CappedPayload {
  const fullBytes = Buffer.byteLength(webhookBody(eventId, payload));
  if (fullBytes <= maxBytes) return { payload, thin: false, bytes: fullBytes, fullBytes };
  const reference = { thin: true, fullEventBytes: fullBytes, fullEventUrl };
  const identifying = Object.fromEntries(Object.entries(payload).filter(([, value]) => isIdentifying(value)));
  const thin = { ...identifying, type: payload.type, timestamp: payload.timestamp, ...reference };
  const thinBytes = Buffer.byteLength(webhookBody(eventId, thin));
  if (thinBytes <= maxBytes) return { payload: thin, thin: true, bytes: thinBytes, fullBytes };
  const bare = { type: payload.type, timestamp: payload.timestamp, ...reference };
  return { payload: bare, thin: true, bytes: Buffer.byteLength(webhookBody(eventId, bare)), fullBytes };
}

function isIdentifying(value: unknown): boolean {
  if (typeof value === 'string') return value.length <= MAX_IDENTIFYING_LENGTH;
  return typeof value === 'number' || typeof value === 'boolean' || value === null;
}
