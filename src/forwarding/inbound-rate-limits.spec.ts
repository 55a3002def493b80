import { InProcessCounters } from '../rate-limits/rate-limit.memory';
import { inboundLimitRefusal, inboundLimitRules, InboundMessageKey } from './inbound-rate-limits';

const key = (...parts: string[]) => `test:${parts.join(':')}`;
const limits = { perSenderPerHour: 3, perDomainPerHour: 5 };
const message = (overrides: Partial<InboundMessageKey> = {}): InboundMessageKey => ({
  sender: 'Boss@Origin.test',
  clientAddress: '192.0.2.7',
  domain: 'fwd.test',
  ...overrides,
});

describe('inbound mail limits', () => {
  it('counts a sender per forwarding domain and client network, and the domain from everyone, by the hour', () => {
    const [sender, domain] = inboundLimitRules(message(), limits, key);
    expect(sender).toMatchObject({ scope: 'smtp-sender', kind: 'window', limit: 3, windowMs: 3_600_000 });
    expect(sender.key).toMatch(/^test:rl:smtp-sender:fwd\.test:192\.0\.2\.7:[\w-]{22}$/);
    expect(sender.key.toLowerCase()).not.toContain('boss');
    expect(domain).toMatchObject({ scope: 'smtp-domain', key: 'test:rl:smtp-domain:fwd.test', limit: 5, windowMs: 3_600_000 });

    const same = (m: InboundMessageKey) => inboundLimitRules(m, limits, key)[0].key;
    expect(same(message({ sender: 'boss@origin.test' }))).toBe(sender.key);
    expect(same(message({ clientAddress: '192.0.2.8' }))).not.toBe(sender.key);
    expect(same(message({ domain: 'other.test' }))).not.toBe(sender.key);
    // One IPv6 host holds a whole /64.
    expect(same(message({ clientAddress: '2001:db8:1:2::1' }))).toBe(same(message({ clientAddress: '2001:db8:1:2:ffff::9' })));
  });

  it('does not count bounces per sender; a limit of 0 is no limit', () => {
    expect(inboundLimitRules(message({ sender: '' }), limits, key).map((r) => r.scope)).toEqual(['smtp-domain']);
    expect(inboundLimitRules(message(), { perSenderPerHour: 0, perDomainPerHour: 5 }, key).map((r) => r.scope)).toEqual(['smtp-domain']);
    expect(inboundLimitRules(message(), { perSenderPerHour: 0, perDomainPerHour: 0 }, key)).toEqual([]);
  });

  it('refuses past either limit with 451 4.7.1 naming the limit, and counts nothing refused', () => {
    const counters = new InProcessCounters();
    const now = Date.UTC(2026, 10, 27, 12);
    const send = (m: InboundMessageKey) => counters.consume(inboundLimitRules(m, limits, key), 1, now);
    for (let i = 0; i < 3; i++) expect(send(message()).allowed).toBe(true);
    const refused = send(message());
    expect(refused.allowed).toBe(false);
    const bySender = inboundLimitRefusal(refused.states, message());
    expect(bySender.responseCode).toBe(451);
    expect(bySender.message).toMatch(
      /^4\.7\.1 Too many messages from <Boss@Origin\.test> to fwd\.test: the limit is 3 an hour, try again in \d+ min$/,
    );

    // Two more from another sender fill the domain's 5; the refused one above was not counted.
    expect(send(message({ sender: 'ada@origin.test' })).allowed).toBe(true);
    expect(send(message({ sender: 'bob@origin.test' })).allowed).toBe(true);
    const full = send(message({ sender: 'cy@origin.test' }));
    expect(full.allowed).toBe(false);
    expect(inboundLimitRefusal(full.states, message({ sender: 'cy@origin.test' })).message).toMatch(
      /^4\.7\.1 Too many messages for fwd\.test: the limit is 5 an hour, try again in \d+ min$/,
    );
    expect(send(message({ domain: 'other.test' })).allowed).toBe(true);
  });
});
