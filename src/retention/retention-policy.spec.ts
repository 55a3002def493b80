import { validateEnv } from '../config/env.schema';
import { AWAITING_DELIVERY, FINAL_STATUSES, MESSAGE_STATUSES } from '../outbox/message.entity';
import { dueSweeps, RETENTION_KINDS, retentionPolicy } from './retention-policy';

const DAY_MS = 86_400_000;

describe('retention policy', () => {
  it('keeps bodies 30 days, raw inbound mail and published events 7, webhook deliveries 30 by default', () => {
    expect(retentionPolicy(validateEnv({}))).toEqual({
      message_content: 30,
      inbound_messages: 7,
      outbox_events: 7,
      webhook_deliveries: 30,
    });
  });

  it('sweeps every kind with days, each up to its own cutoff', () => {
    const now = new Date('2026-03-31T12:00:00Z');
    const sweeps = dueSweeps(
      retentionPolicy(validateEnv({ RETENTION_MESSAGE_CONTENT_DAYS: '1', RETENTION_OUTBOX_EVENTS_DAYS: '90' })),
      now,
    );
    expect(sweeps.map((s) => s.kind)).toEqual([...RETENTION_KINDS]);
    const cutoff = Object.fromEntries(sweeps.map((s) => [s.kind, s.cutoff.getTime()]));
    expect(cutoff).toEqual({
      message_content: now.getTime() - DAY_MS,
      inbound_messages: now.getTime() - 7 * DAY_MS,
      outbox_events: now.getTime() - 90 * DAY_MS,
      webhook_deliveries: now.getTime() - 30 * DAY_MS,
    });
  });

  it('leaves a kind set to 0 alone: kept forever', () => {
    const env = validateEnv({ RETENTION_MESSAGE_CONTENT_DAYS: '0', RETENTION_WEBHOOK_DELIVERIES_DAYS: '0' });
    expect(retentionPolicy(env)).toMatchObject({ message_content: null, webhook_deliveries: null });
    expect(dueSweeps(retentionPolicy(env), new Date()).map((s) => s.kind)).toEqual(['inbound_messages', 'outbox_events']);
  });

  it('refuses negative or fractional days', () => {
    expect(() => validateEnv({ RETENTION_OUTBOX_EVENTS_DAYS: '-1' })).toThrow(/RETENTION_OUTBOX_EVENTS_DAYS/);
    expect(() => validateEnv({ RETENTION_INBOUND_MESSAGES_DAYS: '1.5' })).toThrow(/RETENTION_INBOUND_MESSAGES_DAYS/);
  });

  it('clears bodies only of messages no attempt follows: final and awaiting statuses split every status', () => {
    expect([...FINAL_STATUSES, ...AWAITING_DELIVERY].sort()).toEqual([...MESSAGE_STATUSES].sort());
    expect(FINAL_STATUSES.filter((s) => AWAITING_DELIVERY.includes(s))).toEqual([]);
  });
});
