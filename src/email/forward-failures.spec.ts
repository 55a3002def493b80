import { expired, expiredUnanswered, notSent, recordFailures, refused, reportsFailures, suppressedDestinations } from './forward-failures';

describe('forward failures', () => {
  it('owes a notification for forwarded mail with a sender only', () => {
    expect(reportsFailures({ inboundMessageId: 'inb_1', envelopeFrom: 'SRS0=x@fwd.test' })).toBe(true);
    expect(reportsFailures({ inboundMessageId: 'inb_1', envelopeFrom: '' })).toBe(false);
    expect(reportsFailures({ inboundMessageId: null, envelopeFrom: null })).toBe(false);
    expect(reportsFailures({ inboundMessageId: null, envelopeFrom: '' })).toBe(false);
  });

  it("takes the reply's enhanced code when it is of the reply's class", () => {
    expect(refused({ recipient: 'a@d.test', responseCode: 550, response: '550 5.1.1 No such user' })).toEqual({
      recipient: 'a@d.test',
      status: '5.1.1',
      diagnostic: 'smtp; 550 5.1.1 No such user',
    });
    expect(refused({ recipient: 'a@d.test', responseCode: 554, response: '554 rejected' }).status).toBe('5.0.0');
    expect(expired({ recipient: 'a@d.test', responseCode: 451, response: '451 4.2.2 Mailbox full' }).status).toBe('4.2.2');
    expect(expired({ recipient: 'a@d.test', responseCode: 451, response: '451 try later' }).status).toBe('4.4.7');
  });

  it('tells the sender nothing of our own failures but that time ran out, or that the message could not be forwarded', () => {
    expect(expiredUnanswered(['a@d.test'])).toEqual([
      { recipient: 'a@d.test', status: '4.4.7', diagnostic: 'X-Mailroom; delivery time expired' },
    ]);
    expect(notSent(['a@d.test'])[0]).toMatchObject({ status: '5.3.0' });
  });

  it('reports a destination suppressed while the message waited as a disabled mailbox', () => {
    expect(suppressedDestinations(['a@d.test'])).toEqual([
      { recipient: 'a@d.test', status: '5.2.1', diagnostic: 'X-Mailroom; mailbox disabled, not accepting messages' },
    ]);
  });

  it('writes each destination once: a repeated record is left as it was', () => {
    const params: unknown[] = [];
    const sql = recordFailures('msg_1', expiredUnanswered(['a@d.test', 'b@d.test']))((value) => `$${params.push(value)}`);
    expect(sql).toMatch(/^INSERT INTO forward_failures \(message_id, recipient, status, diagnostic\) VALUES \(\$1, \$2, \$3, \$4\), \(\$5/);
    expect(sql).toMatch(/ON CONFLICT DO NOTHING$/);
    expect(params).toHaveLength(8);
  });
});
