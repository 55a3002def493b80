import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EVERY_RECIPIENT_SUPPRESSED } from '../../outbox/message-event.entity';
import { type ComposedEmail, OutboxService } from '../../outbox/outbox.service';
import type { SuppressionEntry } from '../../suppression/suppression-entry.entity';
import type { SuppressionService } from '../../suppression/suppression.service';
import { heldNotificationEvent, OwnerNotifications } from './owner-notifications';

const entry = (email: string): SuppressionEntry =>
  Object.assign({} as SuppressionEntry, { email, reason: 'bounced', source: 'msg_b', createdAt: new Date('2026-06-09T10:00:00.000Z') });

/** The list as compose finds it, and the entries as the second read finds them (the address may be gone by then). */
function notifications(suppressed: string[], entries: SuppressionEntry[] = suppressed.map(entry)): OwnerNotifications {
  const suppression = {
    suppressedAmong: (_: string, addresses: string[]) =>
      Promise.resolve(new Set(addresses.map((a) => a.toLowerCase()).filter((a) => suppressed.includes(a)))),
    entriesAmong: () => Promise.resolve(entries),
  } as unknown as SuppressionService;
  const outbox = new OutboxService({} as never, {} as never, suppression, {} as never, {} as never);
  return new OwnerNotifications(outbox, suppression);
}

const email = (to: string[], cc: string[] = []): ComposedEmail => ({
  from: { name: 'Contact', address: 'forms@site.test' },
  systemSender: false,
  to,
  cc,
  subject: 'New submission',
  text: 'hello',
});

describe('OwnerNotifications', () => {
  it('addresses the copies when every To recipient is suppressed, rather than sending an empty To header', async () => {
    const n = await notifications(['owner@site.test']).compose('acc_1', email(['owner@site.test'], ['sales@site.test']));
    expect(n.message?.message.content.to).toEqual([{ name: '', address: 'sales@site.test' }]);
    expect(n.message?.message.content.cc).toEqual([]);
    expect(n.held.map((h) => h.email)).toEqual(['owner@site.test']);
  });

  it('keeps To and Cc apart while a To recipient remains', async () => {
    const n = await notifications([]).compose('acc_1', email(['owner@site.test'], ['sales@site.test']));
    expect(n.message?.message.content.to).toEqual([{ name: '', address: 'owner@site.test' }]);
    expect(n.message?.message.content.cc).toEqual([{ name: '', address: 'sales@site.test' }]);
  });

  it('holds a suppressed recipient whose entry is gone by the time it is read (lifted meanwhile), so the sweep sends it', async () => {
    const n = await notifications(['owner@site.test', 'other@site.test'], [entry('other@site.test')]).compose(
      'acc_1',
      email(['Owner@site.test', 'other@site.test']),
    );
    expect(n.message).toBeNull();
    expect(n.held).toEqual([
      { email: 'owner@site.test', reason: 'lifted', since: expect.any(String), source: null },
      { email: 'other@site.test', reason: 'bounced', since: '2026-06-09T10:00:00.000Z', source: 'msg_b' },
    ]);
  });
});

describe('heldNotificationEvent', () => {
  const about = { accountId: 'acc_1', formId: 'frm_1', formName: 'Contact', submissionId: 'sub_1' };

  it('writes the event only for a subscribed account, with the payload the trigger writes (one SQL definition each)', () => {
    const statement = heldNotificationEvent(about, { email: 'o@x.test', reason: 'bounced', since: 'now', source: null }, new Date());
    expect(typeof statement).toBe('function');
    const sql = (statement as (p: (v: unknown) => string) => string)(() => '$1');
    expect(sql).toContain('form_notification_failed_payload(');
    expect(sql).toContain('form_notification_held_detail(');
    expect(sql).toContain('WHERE form_notification_subscribed(');
  });

  it('announces no recipient whose suppression was lifted already', () => {
    expect(heldNotificationEvent(about, { email: 'o@x.test', reason: 'lifted', since: 'now', source: null }, new Date())).toBeNull();
  });
});

describe('migration AddSubmissionNotificationState', () => {
  it('tells the failure of a message every recipient of which was suppressed by the detail DeliveryService writes', () => {
    const migration = readFileSync(join(__dirname, '../../database/migrations/1795770001000-AddSubmissionNotificationState.ts'), 'utf8');
    expect(migration).toContain(`detail IS NOT DISTINCT FROM '${EVERY_RECIPIENT_SUPPRESSED}'`);
  });
});
