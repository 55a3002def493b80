import { meteringOf } from './acceptance.repository';
import type { Message } from './message.entity';

const message = (accountId: string, recipients: string[]) => ({ message: { accountId, recipients } as Message, events: [] });

describe('meteringOf', () => {
  it('counts one email per recipient of every message by default', () => {
    expect(meteringOf({ messages: [message('acc_a', ['x@a.test', 'y@a.test']), message('acc_a', ['z@a.test'])] })).toEqual({
      accountId: 'acc_a',
      emails: 3,
      submissions: 0,
    });
  });

  it('meters nothing for an acceptance without messages unless told', () => {
    expect(meteringOf({ messages: [] })).toBeNull();
    expect(meteringOf({ messages: [], metering: { accountId: 'acc_a', emails: 500, submissions: 0 } })?.emails).toBe(500);
  });

  it('keeps an explicit null: the messages are metered elsewhere', () => {
    expect(meteringOf({ messages: [message('acc_a', ['x@a.test'])], metering: null })).toBeNull();
  });
});
