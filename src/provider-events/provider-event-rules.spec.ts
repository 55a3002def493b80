import {
  bounceSuppresses,
  bounceType,
  pickByHeader,
  EVENT_EFFECTS,
  eventDetail,
  mailboxStateFailure,
  normalizeEventsBody,
  parseMessageReference,
  reportedBounceType,
  resolveRecipient,
} from './provider-event-rules';

describe('parseMessageReference', () => {
  it('takes msg_… as our id', () => {
    expect(parseMessageReference('msg_4fQ2xY7bN1kLp0sT9uVw3a')).toEqual({ id: 'msg_4fQ2xY7bN1kLp0sT9uVw3a' });
    expect(parseMessageReference(' msg_abc ')).toEqual({ id: 'msg_abc' });
  });

  it('takes anything else as an RFC Message-ID, with or without its angle brackets', () => {
    expect(parseMessageReference('<4fQ2xY7b@acme.test>')).toEqual({ headerMessageId: '<4fQ2xY7b@acme.test>' });
    expect(parseMessageReference('4fQ2xY7b@acme.test')).toEqual({ headerMessageId: '<4fQ2xY7b@acme.test>' });
    expect(parseMessageReference('<msg_abc@acme.test>')).toEqual({ headerMessageId: '<msg_abc@acme.test>' });
    expect(parseMessageReference('msg_abc@acme.test')).toEqual({ headerMessageId: '<msg_abc@acme.test>' });
  });
});

describe('normalizeEventsBody', () => {
  const event = { messageId: 'msg_a', type: 'delivered' };

  it('wraps an array and a single event as {events}', () => {
    expect(normalizeEventsBody([event, event])).toEqual({ events: [event, event] });
    expect(normalizeEventsBody(event)).toEqual({ events: [event] });
  });

  it('keeps {events}, and leaves what is not an event to the validation', () => {
    expect(normalizeEventsBody({ events: [event] })).toEqual({ events: [event] });
    expect(normalizeEventsBody({ events: 'x' })).toEqual({ events: 'x' });
    expect(normalizeEventsBody({})).toEqual({});
    expect(normalizeEventsBody('text')).toBe('text');
    expect(normalizeEventsBody(null)).toBeNull();
  });
});

describe('resolveRecipient', () => {
  it('matches the given address case-insensitively and answers it as the message spells it', () => {
    expect(resolveRecipient('delivered', ['Ada@Example.org', 'bob@example.org'], ' ada@example.ORG')).toEqual({
      recipient: 'Ada@Example.org',
    });
  });

  it('ignores an address the message was not sent to', () => {
    expect(resolveRecipient('bounced', ['ada@example.org'], 'eve@example.org')).toEqual({
      ignored: 'eve@example.org is not a recipient of the message',
    });
  });

  it('takes the only recipient when none is given', () => {
    expect(resolveRecipient('bounced', ['ada@example.org'])).toEqual({ recipient: 'ada@example.org' });
    expect(resolveRecipient('opened', ['ada@example.org'])).toEqual({ recipient: 'ada@example.org' });
  });

  it('lets delivery events of a message with several recipients concern the message, but not bounces or complaints', () => {
    const recipients = ['ada@example.org', 'bob@example.org'];
    expect(resolveRecipient('delivered', recipients)).toEqual({ recipient: null });
    expect(resolveRecipient('clicked', recipients)).toEqual({ recipient: null });
    expect(resolveRecipient('bounced', recipients)).toHaveProperty('ignored');
    expect(resolveRecipient('complained', recipients)).toHaveProperty('ignored');
  });
});

describe('EVENT_EFFECTS', () => {
  it('moves statuses only forward', () => {
    expect(EVENT_EFFECTS.delivered.move).toEqual({ from: ['sent'], to: 'delivered' });
    expect(EVENT_EFFECTS.bounced.move).toEqual({ from: ['sent', 'delivered'], to: 'bounced' });
    for (const type of ['complained', 'deferred', 'opened', 'clicked'] as const) expect(EVENT_EFFECTS[type].move).toBeUndefined();
    // Neither a late delivered nor anything else leaves a final state.
    for (const effect of Object.values(EVENT_EFFECTS)) {
      for (const final of ['bounced', 'failed', 'cancelled'] as const) expect(effect.move?.from ?? []).not.toContain(final);
    }
  });

  it('bounces the message only when every recipient bounced, and suppresses bounces and complaints', () => {
    expect(EVENT_EFFECTS.bounced.everyRecipient).toBe(true);
    expect(EVENT_EFFECTS.bounced.suppress).toBe('bounced');
    expect(EVENT_EFFECTS.complained.suppress).toBe('complained');
    expect(EVENT_EFFECTS.delivered.suppress).toBeUndefined();
  });
});

describe('eventDetail', () => {
  it('is the URL of a click, else the reason', () => {
    expect(eventDetail('clicked', undefined, 'https://example.org/a')).toBe('https://example.org/a');
    expect(eventDetail('bounced', '550 5.1.1 no such user', 'https://example.org/a')).toBe('550 5.1.1 no such user');
    expect(eventDetail('delivered')).toBeNull();
  });
});

describe('bounceSuppresses', () => {
  it('suppresses a bounce about the address, and one without any code (providers report only hard bounces)', () => {
    expect(bounceSuppresses('550 5.1.1 mailbox does not exist')).toBe(true);
    expect(bounceSuppresses('smtp; 550 5.2.1 mailbox disabled')).toBe(true);
    expect(bounceSuppresses('550 no such user')).toBe(true);
    expect(bounceSuppresses('Mailbox does not exist')).toBe(true);
    expect(bounceSuppresses(undefined)).toBe(true);
  });

  it('does not suppress a bounce whose code is about the content, policy or system', () => {
    expect(bounceSuppresses('550 5.7.0 potential security issue')).toBe(false);
    expect(bounceSuppresses('smtp; 554 5.7.1 message rejected as spam')).toBe(false);
    expect(bounceSuppresses('552 5.2.2 mailbox full')).toBe(false);
    expect(bounceSuppresses('554 transaction failed')).toBe(false);
  });
});

describe('bounceType', () => {
  it('takes the provider’s word first', () => {
    expect(bounceType('soft', '550 5.1.1 no such user')).toBe('soft');
    expect(bounceType('hard', '452 4.2.2 mailbox full')).toBe('hard');
  });

  it('is soft when the reason carries only temporary codes', () => {
    expect(bounceType(undefined, '452 4.2.2 Mailbox full')).toBe('soft');
    expect(bounceType(undefined, 'smtp; 421 try again later')).toBe('soft');
    expect(bounceType(undefined, '4.4.7 Delivery time expired')).toBe('soft');
  });

  it('is hard otherwise: a permanent code, no code at all, or an address that merely looks like one', () => {
    expect(bounceType(undefined, '550 5.1.1 no such user')).toBe('hard');
    expect(bounceType(undefined, '550 5.1.1 after 451 4.7.1 earlier')).toBe('hard');
    expect(bounceType(undefined, undefined)).toBe('hard');
    expect(bounceType(undefined, 'host 10.4.2.1 refused')).toBe('hard');
  });

  it('is soft for a full mailbox (5.2.x), even when the provider calls it hard, unless the report says it suppresses', () => {
    expect(bounceType(undefined, '552 5.2.2 Mailbox full')).toBe('soft');
    expect(bounceType('hard', '552 5.2.2 Mailbox full')).toBe('soft');
    expect(bounceType('hard', 'smtp; 552 Requested mail action aborted: exceeded storage allocation')).toBe('soft');
    expect(bounceType('hard', '552 5.2.2 Mailbox full', true)).toBe('hard');
    expect(bounceType(undefined, '550 5.2.1 mailbox disabled')).toBe('hard');
  });
});

describe('mailboxStateFailure', () => {
  it('is true for a permanent X.2.x other than X.2.1 (disabled, which suppresses)', () => {
    expect(mailboxStateFailure({ reason: '552 5.2.2 Mailbox full' })).toBe(true);
    expect(mailboxStateFailure({ reason: '552 5.2.3 Message too large for this mailbox' })).toBe(true);
    expect(mailboxStateFailure({ reason: '550 5.2.1 mailbox disabled' })).toBe(false);
    expect(mailboxStateFailure({ reason: '550 5.1.1 no such user' })).toBe(false);
    expect(mailboxStateFailure({ reason: '452 4.2.2 Mailbox full' })).toBe(false);
    expect(mailboxStateFailure({ reason: '550 5.7.1 relaying denied' })).toBe(false);
  });

  it('reads a DSN’s Status first, passing over X.0.0, then the reason', () => {
    expect(mailboxStateFailure({ status: '5.2.2', reason: '550 mailbox unavailable' })).toBe(true);
    expect(mailboxStateFailure({ status: '5.1.1', reason: '552 5.2.2 Mailbox full' })).toBe(false);
    expect(mailboxStateFailure({ status: '5.0.0', reason: 'smtp; 552 5.2.2 Mailbox full' })).toBe(true);
    expect(mailboxStateFailure({ status: '5.0.0', reason: 'smtp; 550 5.1.1 no such user' })).toBe(false);
  });

  it('takes a 552 reply without an enhanced code as a full mailbox, and nothing else', () => {
    expect(mailboxStateFailure({ reason: 'smtp; 552 exceeded storage allocation' })).toBe(true);
    expect(mailboxStateFailure({ reason: '550 no such user' })).toBe(false);
    expect(mailboxStateFailure({ reason: 'quota 552 reached' })).toBe(false);
    expect(mailboxStateFailure({})).toBe(false);
  });
});

describe('reportedBounceType', () => {
  it('is soft for a 4.x.x Status (given up after temporary failures) and a full mailbox, hard otherwise', () => {
    expect(reportedBounceType('4.4.7', '4.4.7 failed')).toBe('soft');
    expect(reportedBounceType('4.2.2', '452 4.2.2 Mailbox full')).toBe('soft');
    expect(reportedBounceType('5.2.2', '552 5.2.2 Mailbox full')).toBe('soft');
    expect(reportedBounceType('5.0.0', '552 5.2.2 Mailbox full')).toBe('soft');
    expect(reportedBounceType('5.1.1', '550 5.1.1 no such user')).toBe('hard');
    expect(reportedBounceType('5.2.1', '5.2.1 failed')).toBe('hard');
    expect(reportedBounceType('5.7.1', '550 5.7.1 rejected by policy')).toBe('hard');
  });
});

describe('pickByHeader', () => {
  const original = { id: 'msg_original', recipients: ['alias@fwd.test'] };
  const forwarded = { id: 'msg_forwarded', recipients: ['owner@elsewhere.test'] };

  it('picks the one message sent to the recipient', () => {
    expect(pickByHeader([original, forwarded], 'OWNER@elsewhere.test')).toBe(forwarded);
    expect(pickByHeader([original, forwarded], 'alias@fwd.test')).toBe(original);
  });

  it('picks the only message when the event names no recipient', () => {
    expect(pickByHeader([original])).toBe(original);
  });

  it('picks none when several remain, or none was sent to the recipient', () => {
    expect(pickByHeader([original, forwarded])).toEqual({ ignored: expect.stringContaining('2 messages'), ambiguous: true });
    const copy = { id: 'msg_copy', recipients: ['owner@elsewhere.test'] };
    expect(pickByHeader([forwarded, copy], 'owner@elsewhere.test')).toEqual({
      ignored: expect.stringContaining('2 messages'),
      ambiguous: true,
    });
    expect(pickByHeader([original], 'someone@else.test')).toEqual({ ignored: expect.any(String) });
    expect(pickByHeader([], 'someone@else.test')).toEqual({ ignored: expect.any(String) });
  });
});
