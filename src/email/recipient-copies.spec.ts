import { recipientCopies, RecipientCopy, sendCopies } from './recipient-copies';
import { ProviderFailure, TransportResult } from './transport/mail-transport';

const sent = (recipients: string[]): TransportResult => ({
  accepted: recipients,
  rejected: [],
  response: `250 ok ${recipients.join(',')}`,
});

describe('recipientCopies', () => {
  const pending = ['ada@example.org', 'bo@example.org'];

  it('sends a message with unsubscribe links to each recipient in a transaction of its own', () => {
    const own = [
      { recipients: ['ada@example.org'], unsubscribeFor: 'ada@example.org' },
      { recipients: ['bo@example.org'], unsubscribeFor: 'bo@example.org' },
    ];
    expect(recipientCopies({ tracking: { unsubscribe: true }, listId: null, inboundMessageId: null }, pending)).toEqual(own);
    expect(recipientCopies({ tracking: null, listId: 'list_1', inboundMessageId: null }, ['ada@example.org'])).toEqual([own[0]]);
  });

  it('sends any other message, and forwarded mail, in one transaction to all its recipients', () => {
    const one = [{ recipients: pending, unsubscribeFor: null }];
    expect(recipientCopies({ tracking: { opens: true, clicks: true }, listId: null, inboundMessageId: null }, pending)).toEqual(one);
    expect(recipientCopies({ tracking: null, listId: null, inboundMessageId: null }, pending)).toEqual(one);
    expect(recipientCopies({ tracking: { unsubscribe: true }, listId: null, inboundMessageId: 'in_1' }, pending)).toEqual(one);
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
      (err) => heard.push(err),
    );
    expect(result.accepted).toEqual(['a@x.test']);
    expect(result.rejected.map((r) => [r.recipient, r.responseCode])).toEqual([
      ['b@x.test', 451],
      ['c@x.test', 451],
    ]);
    expect(result.rejected[0].response).toMatch(/^451 4\.3\.0 .*554 5\.7\.1 content refused by the relay$/);
    expect(heard).toHaveLength(1);
  });

  it('shows no internals of an error of ours in the answer', async () => {
    const result = await sendCopies(copies, (copy, i) =>
      i === 2 ? Promise.reject(new Error('relation "secret_table" does not exist')) : Promise.resolve(sent(copy.recipients)),
    );
    expect(result.rejected).toEqual([{ recipient: 'c@x.test', responseCode: 451, response: expect.stringMatching(/internal error$/) }]);
  });
});
