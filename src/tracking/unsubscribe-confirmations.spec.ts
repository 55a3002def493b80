import { AppConfigService } from '../config/app-config.service';
import type { OutboxService } from '../outbox/outbox.service';
import type { Claim, RedisService } from '../redis/redis.service';
import type { TrackedMessageRecord } from './tracking.repository';
import { TrackingTokens } from './tracking-tokens';
import { UnsubscribeConfirmations, unsubscribeConfirmationEmail } from './unsubscribe-confirmations';

const config = AppConfigService.fromEnv({ ENCRYPTION_KEY: 'a'.repeat(64), PUBLIC_URL: 'https://mr.test', FORMS_FROM: 'Ops <ops@mr.test>' });
const tokens = new TrackingTokens(config);
const MESSAGE: TrackedMessageRecord = {
  id: 'msg_abc123',
  accountId: 'acc_1',
  fromAddress: 'news@acme.test',
  recipients: ['Ada@Example.org', 'bo@example.org'],
  sentAt: new Date(0),
  listId: null,
  tracking: { opens: false, clicks: false, unsubscribe: true },
};

describe('unsubscribeConfirmationEmail', () => {
  it('is the operator’s email to the recipient with its link, every value escaped in the HTML', () => {
    const email = unsubscribeConfirmationEmail(
      { recipient: 'ada@example.org', link: 'https://mr.test/u/x?a=1&b=2', from: 'news@acme.test', list: '<News>' },
      config.formsFrom,
    );
    expect(email).toMatchObject({ from: { name: 'Ops', address: 'ops@mr.test' }, systemSender: true, to: ['ada@example.org'] });
    expect(email.subject).toBe('Confirm unsubscribing from news@acme.test');
    expect(email.text).toContain('https://mr.test/u/x?a=1&b=2');
    expect(email.text).toContain('the mailing list “<News>”');
    expect(email.html).toContain('href="https://mr.test/u/x?a=1&amp;b=2"');
    expect(email.html).toContain('&lt;News&gt;');
  });
});

describe('UnsubscribeConfirmations', () => {
  function setUp(claim: Claim) {
    const release = claim.state === 'claimed' ? claim.release : undefined;
    const redis = { key: (...parts: string[]) => parts.join(':'), claim: jest.fn().mockResolvedValue(claim) };
    const outbox = {
      compose: jest.fn().mockResolvedValue({ message: { id: 'msg_new' }, events: [] }),
      accept: jest.fn().mockResolvedValue(undefined),
    };
    const confirmations = new UnsubscribeConfirmations(
      tokens,
      outbox as unknown as OutboxService,
      redis as unknown as RedisService,
      config,
    );
    return { confirmations, redis, outbox, release };
  }
  const claimed = (): Claim => ({ state: 'claimed', release: jest.fn().mockResolvedValue(undefined) });

  it('mails a recipient its own link, unmetered, keyed by its tag rather than its address', async () => {
    const { confirmations, redis, outbox } = setUp(claimed());
    confirmations.offer(MESSAGE, 'ada@example.org', null);
    await confirmations.settled();
    expect(redis.claim).toHaveBeenCalledWith(
      `unsubscribe:confirmation:msg_abc123:${tokens.recipientTag('msg_abc123', 'ada@example.org')}`,
      expect.any(Number),
      expect.any(Number),
    );
    expect(outbox.compose).toHaveBeenCalledWith('acc_1', expect.objectContaining({ to: ['Ada@Example.org'] }));
    expect(outbox.compose.mock.calls[0][1].text).toContain(tokens.unsubscribeUrl('msg_abc123', 'Ada@Example.org'));
    expect(outbox.accept).toHaveBeenCalledWith({ messages: [expect.anything()], metering: null });
  });

  it('mails nothing to an address that was not a recipient, nor again, nor without Redis’s answer', async () => {
    for (const [claim, address] of [
      [claimed(), 'stranger@example.org'],
      [{ state: 'taken' }, 'bo@example.org'],
      [{ state: 'unknown', reason: 'Redis did not answer' }, 'bo@example.org'],
    ] as [Claim, string][]) {
      const { confirmations, outbox } = setUp(claim);
      confirmations.offer(MESSAGE, address, null);
      await confirmations.settled();
      expect(outbox.compose).not.toHaveBeenCalled();
    }
  });

  it('gives the claim back when the email could not be accepted, so that asking again mails it', async () => {
    const { confirmations, outbox, release } = setUp(claimed());
    outbox.accept.mockRejectedValue(new Error('database down'));
    confirmations.offer(MESSAGE, 'bo@example.org', null);
    await confirmations.settled();
    expect(release).toHaveBeenCalled();
  });
});
