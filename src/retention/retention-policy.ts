import type { EnvSchema } from '../config/env.schema';

/** What retention removes or clears, one `kind` of mailroom_retention_swept_total each. */
export const RETENTION_KINDS = ['message_content', 'inbound_messages', 'outbox_events', 'webhook_deliveries'] as const;
export type RetentionKind = (typeof RETENTION_KINDS)[number];

/** The setting that gives each kind its days. */
export const RETENTION_SETTINGS = {
  message_content: 'RETENTION_MESSAGE_CONTENT_DAYS',
  inbound_messages: 'RETENTION_INBOUND_MESSAGES_DAYS',
  outbox_events: 'RETENTION_OUTBOX_EVENTS_DAYS',
  webhook_deliveries: 'RETENTION_WEBHOOK_DELIVERIES_DAYS',
} as const satisfies Record<RetentionKind, keyof EnvSchema>;

/** Days each kind is kept; null: kept forever (the setting is 0). */
export type RetentionPolicy = Record<RetentionKind, number | null>;

export function retentionPolicy(env: EnvSchema): RetentionPolicy {
  const days = (kind: RetentionKind) => env[RETENTION_SETTINGS[kind]] || null;
  return Object.fromEntries(RETENTION_KINDS.map((kind) => [kind, days(kind)])) as RetentionPolicy;
}

const DAY_MS = 24 * 60 * 60 * 1000;

/** The kinds to sweep now, each with the time before which its rows are past retention; kinds kept forever are left out. */
export function dueSweeps(policy: RetentionPolicy, now: Date): { kind: RetentionKind; cutoff: Date }[] {
  return RETENTION_KINDS.flatMap((kind) => {
    const days = policy[kind];
    return days === null ? [] : [{ kind, cutoff: new Date(now.getTime() - days * DAY_MS) }];
  });
}
