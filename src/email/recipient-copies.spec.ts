import type { MessageContent } from '../outbox/message.entity';
import { recipientContent, trackedContent, type TrackedMessage, type TrackingLinks } from '../tracking/tracked-content';
import { CopiesOf, recipientCopies, RecipientCopy, sendCopies } from './recipient-copies';
import { ProviderFailure, TransportResult } from './transport/mail-transport';

const sent = (recipients: string[]): TransportResult => ({
  accepted: recipients,
  rejected: [],
  response: `250 ok ${recipients.join(',')}`,
});

describe('recipientCopies', () => {
  const pending = ['ada@example.org', 'bo@example.org'];
  const links: TrackingLinks = {
    openUrl: (id) => `https://mr.test/o/${id}`,
    clickUrl: (id, i) => `https://mr.test/c/${id}/${i}`,
    unsubscribeUrl: (id, recipient) => `https://mr.test/u/${id}${recipient ? `/${recipient}` : ''}`,
  };
  /** The message's content as delivery has it (tracked), and its copy for one recipient. */
  const copiesOf = (message: Pick<TrackedMessage, 'tracking' | 'listId'>, parts: Partial<MessageContent> = {}): CopiesOf => {
    const content: MessageContent = {
      ...{ from: { name: '', address: 'news@acme.test' }, to: [], cc: [], replyTo: [], subject: 'News', text: 'Hello' },
      ...{ headers: {}, attachments: [], date: '2030-01-01T00:00:00.000Z' },
      ...parts,
    };
    const shared = trackedContent({ id: 'msg_1', content, ...message }, links).content;
    return { shared, own: (recipient) => recipientContent(shared, 'msg_1', links, recipient) };
  };
  const own = [
    { recipients: ['ada@example.org'], unsubscribeFor: 'ada@example.org' },
    { recipients: ['bo@example.org'], unsubscribeFor: 'bo@example.org' },
  ];
  const one = [{ recipients: pending, unsubscribeFor: null }];

  it('sends a message with unsubscribe links to each recipient in a transaction of its own', () => {
    const asked = { tracking: { unsubscribe: true }, listId: null };
    expect(recipientCopies(asked, pending, copiesOf(asked))).toEqual(own);
    const listSend = { tracking: null, listId: 'list_1' };
    expect(recipientCopies(listSend, ['ada@example.org'], copiesOf(listSend))).toEqual([own[0]]);
  });

  it('splits a message with the sender’s own List-Unsubscribe only when the subject or body has the link', () => {
    const asked = { tracking: { unsubscribe: true }, listId: null };
    const headers = { 'List-Unsubscribe': '<mailto:leave@acme.test>' };
    expect(recipientCopies(asked, pending, copiesOf(asked, { headers }))).toEqual(one);
    const link = links.unsubscribeUrl('msg_1');
    expect(recipientCopies(asked, pending, copiesOf(asked, { headers, text: `Leave: ${link}` }))).toEqual(own);
    expect(recipientCopies(asked, pending, copiesOf(asked, { headers, html: `<a href="${link}">Leave</a>` }))).toEqual(own);
    expect(recipientCopies(asked, pending, copiesOf(asked, { headers, subject: `News ${link}` }))).toEqual(own);
  });

  it('sends any other message, and forwarded mail or a DSN, in one transaction to all its recipients', () => {
    const tracked = { tracking: { opens: true, clicks: true }, listId: null };
    expect(recipientCopies(tracked, pending, copiesOf(tracked))).toEqual(one);
    const plain = { tracking: null, listId: null };
    expect(recipientCopies(plain, pending, copiesOf(plain))).toEqual(one);
    expect(recipientCopies({ tracking: { unsubscribe: true }, listId: null }, pending, null)).toEqual(one);
  });
});

describe('sendCopies', () => {
  const copies: RecipientCopy[] = ['a@x.test', 'b@x.test', 'c@x.test'].map((r) => ({ recipients: [r], unsubscribeFor: r }));

  it('answers as one transaction would: every copy’s accepted and refused recipients', async () => {
    const result = await sendCopies(copies, (copy) =>
      Promise.resolve(
        copy.recipients[0] === 'b@x.test'
          ? { accepted: [], rejected: [{ recipient: 'b@x.test', responseCode: 550, response: '550 5.1.1 no such user' }], response: '550' }
          : sent(copy.recipients),
      ),
    );
    expect(result.accepted).toEqual(['a@x.test', 'c@x.test']);
    expect(result.rejected).toEqual([{ recipient: 'b@x.test', responseCode: 550, response: '550 5.1.1 no such user' }]);
    expect(result.response).toBe('250 ok c@x.test');
  });

  it('rejects like one transaction when the first copy fails as a whole: nothing was sent', async () => {
    const failure = new ProviderFailure('421 4.3.2 try later');
    const send = jest.fn().mockRejectedValue(failure);
    await expect(sendCopies(copies, send)).rejects.toBe(failure);
    expect(send).toHaveBeenCalledTimes(1);
  });

  it('after a copy was sent, keeps the failed copy’s recipient and the untried ones pending (4xx), never bounced', async () => {
    const heard: Error[] = [];
    const result = await sendCopies(
      copies,
      (copy, i) =>
        i === 1 ? Promise.reject(new ProviderFailure('554 5.7.1 content refused by the relay')) : Promise.resolve(sent(copy.recipients)),
      { onLateError: (err) => heard.push(err) },
    );
    expect(result.accepted).toEqual(['a@x.test']);
    expect(result.rejected.map((r) => [r.recipient, r.responseCode])).toEqual([
      ['b@x.test', 451],
      ['c@x.test', 451],
    ]);
    expect(result.rejected[0].response).toMatch(/^451 4\.3\.0 .*554 5\.7\.1 content refused by the relay$/);
    expect(heard).toHaveLength(1);
    // The provider failed: it shows so, and is not taken for working because a copy went out before.
    expect(result.lateFailure).toBe('554 5.7.1 content refused by the relay');
  });

  it('keeps the answers so far after each accepted copy, the copies not yet sent pending (451 4.3.0)', async () => {
    const kept: TransportResult[] = [];
    const refused = { recipient: 'b@x.test', responseCode: 550, response: '550 5.1.1 no such user' };
    const four = [...copies, { recipients: ['d@x.test'], unsubscribeFor: 'd@x.test' }];
    const result = await sendCopies(
      four,
      (copy) =>
        Promise.resolve(copy.recipients[0] === 'b@x.test' ? { accepted: [], rejected: [refused], response: '550' } : sent(copy.recipients)),
      {
        onCopy: (sofar) => {
          kept.push(sofar);
          return Promise.resolve();
        },
      },
    );
    // After a, and after c; not after b (nothing accepted), nor after the last (the caller keeps the whole answer).
    expect(kept.map((k) => k.accepted)).toEqual([['a@x.test'], ['a@x.test', 'c@x.test']]);
    expect(kept[0].rejected.map((r) => [r.recipient, r.responseCode])).toEqual([
      ['b@x.test', 451],
      ['c@x.test', 451],
      ['d@x.test', 451],
    ]);
    expect(kept[0].rejected[0].response).toMatch(/^451 4\.3\.0 not sent in this attempt/);
    expect(kept[1].rejected).toEqual([refused, expect.objectContaining({ recipient: 'd@x.test', responseCode: 451 })]);
    expect(kept[1].response).toBe('250 ok c@x.test');
    expect(result.accepted).toEqual(['a@x.test', 'c@x.test', 'd@x.test']);
    expect(result.rejected).toEqual([refused]);
  });

  it('waits for the answers so far to be kept before the next copy goes out', async () => {
    const order: string[] = [];
    await sendCopies(
      copies,
      (copy) => {
        order.push(`send ${copy.recipients[0]}`);
        return Promise.resolve(sent(copy.recipients));
      },
      {
        onCopy: async (sofar) => {
          await new Promise((resolve) => setImmediate(resolve)); // a save that takes a round trip
          order.push(`kept ${sofar.accepted.length}`);
        },
      },
    );
    expect(order).toEqual(['send a@x.test', 'kept 1', 'send b@x.test', 'kept 2', 'send c@x.test']);
  });

  it('sends one copy without keeping anything on the way (the caller keeps the answer)', async () => {
    const onCopy = jest.fn();
    await sendCopies([{ recipients: ['a@x.test', 'b@x.test'], unsubscribeFor: null }], (copy) => Promise.resolve(sent(copy.recipients)), {
      onCopy,
    });
    expect(onCopy).not.toHaveBeenCalled();
  });

  it('shows no internals of an error of ours in the answer', async () => {
    const result = await sendCopies(copies, (copy, i) =>
      i === 2 ? Promise.reject(new Error('relation "secret_table" does not exist')) : Promise.resolve(sent(copy.recipients)),
    );
    expect(result.rejected).toEqual([{ recipient: 'c@x.test', responseCode: 451, response: expect.stringMatching(/internal error$/) }]);
    expect(result.lateFailure).toBeUndefined();
  });
});
