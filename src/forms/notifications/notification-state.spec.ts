import { notificationOf, type NotificationMessage } from './notification-state';

const accepted = {
  status: 'accepted' as const,
  spamReason: null,
  messageIds: ['msg_n', 'msg_a'],
  notificationMessageIds: ['msg_n'],
  notificationHeld: null,
};
const messages = (...list: NotificationMessage[]) => new Map(list.map((m) => [m.id, m]));
const held = { email: 'owner@example.com', reason: 'bounced', since: '2026-06-09T10:00:00.000Z', source: 'msg_bounce' };

describe('notificationOf', () => {
  it('says why spam and unconfirmed instant-form submissions notify nobody', () => {
    expect(notificationOf({ ...accepted, status: 'spam', spamReason: 'honeypot field _gotcha was filled in' }, messages())).toMatchObject({
      status: 'none',
      detail: 'no notification: spam (honeypot field _gotcha was filled in)',
    });
    expect(notificationOf({ ...accepted, status: 'held' }, messages()).status).toBe('none');
  });

  it('names each held recipient, since when and what suppressed it', () => {
    const n = notificationOf({ ...accepted, notificationMessageIds: [], notificationHeld: [held] }, messages());
    expect(n.status).toBe('held');
    expect(n.detail).toContain(
      'notification not sent: recipient owner@example.com suppressed since 2026-06-09T10:00:00.000Z (bounced, message msg_bounce)',
    );
    expect(n.heldRecipients).toEqual([held]);
  });

  it('reads the notification message, not the acknowledgment', () => {
    const ack: NotificationMessage = { id: 'msg_a', status: 'bounced', failure: { type: 'bounced', recipient: 'v@x.test', detail: '550' } };
    expect(notificationOf(accepted, messages({ id: 'msg_n', status: 'delivered', failure: null }, ack))).toMatchObject({
      status: 'delivered',
      detail: null,
    });
  });

  it('shows a bounce of one recipient even when the message reached others', () => {
    const n = notificationOf(
      accepted,
      messages({ id: 'msg_n', status: 'sent', failure: { type: 'bounced', recipient: 'b@example.com', detail: '550 5.1.1 no such user' } }),
    );
    expect(n).toMatchObject({ status: 'bounced', detail: 'notification to b@example.com bounced (message msg_n): 550 5.1.1 no such user' });
  });

  it('counts a released notification over the message that found every recipient suppressed', () => {
    const n = notificationOf(
      { ...accepted, notificationMessageIds: ['msg_old', 'msg_new'] },
      messages({ id: 'msg_old', status: 'failed', failure: null }, { id: 'msg_new', status: 'queued', failure: null }),
    );
    expect(n.status).toBe('queued');
  });

  it('takes the first message of a submission stored before notifications were told apart', () => {
    const legacy = { ...accepted, notificationMessageIds: null };
    expect(notificationOf(legacy, messages({ id: 'msg_n', status: 'sent', failure: null })).messageIds).toEqual(['msg_n']);
  });
});

describe('notificationOf, lost notifications', () => {
  it('says not_sent for an accepted submission with no notification message and nobody held', () => {
    const n = notificationOf({ ...accepted, messageIds: [], notificationMessageIds: [] }, messages());
    expect(n).toMatchObject({ status: 'not_sent', detail: 'notification not sent: no notification message and no recipient held' });
  });

  it('says not_sent when the only message found every recipient suppressed and nobody is held', () => {
    const n = notificationOf(accepted, messages({ id: 'msg_n', status: 'failed', failure: null }));
    expect(n.status).toBe('not_sent');
    expect(n.detail).toContain('every recipient was suppressed');
  });

  it('keeps none for a notification message no longer stored', () => {
    expect(notificationOf(accepted, messages()).status).toBe('none');
  });

  it('tells a recipient held because its suppression was lifted as it was sent', () => {
    const lifted = { email: 'owner@example.com', reason: 'lifted', since: '2026-06-09T10:00:00.000Z', source: null };
    const n = notificationOf({ ...accepted, notificationHeld: [lifted] }, messages());
    expect(n.status).toBe('held');
    expect(n.detail).toContain('was taken off the suppression list as it was sent');
  });
});
