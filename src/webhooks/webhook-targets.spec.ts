import { AppConfigService } from '../config/app-config.service';
import { parseWebhookUrl, TargetRefused, WebhookTargets } from './webhook-targets';

describe('parseWebhookUrl', () => {
  it('takes http and https URLs, normalized', () => {
    expect(parseWebhookUrl(' https://Example.com/hooks?x=1 ').href).toBe('https://example.com/hooks?x=1');
    expect(parseWebhookUrl('http://2130706433/').hostname).toBe('127.0.0.1');
  });

  it.each([
    ['ftp://example.com/', 'must use http or https, not ftp'],
    ['javascript:alert(1)', 'must use http or https, not javascript'],
    ['https://user:pw@example.com/', 'must not contain a user name or password'],
    ['https://user@example.com/', 'must not contain a user name or password'],
    ['example.com/hook', 'is not a valid URL'],
  ])('refuses %s', (raw, message) => {
    expect(() => parseWebhookUrl(raw)).toThrow(new TargetRefused(message));
  });

  it('refuses a URL longer than 2048 characters once percent-encoded', () => {
    const raw = `https://example.com/${'é'.repeat(1100)}`;
    expect(raw.length).toBeLessThan(2048);
    expect(() => parseWebhookUrl(raw)).toThrow(new TargetRefused('must be at most 2048 characters once encoded'));
  });
});

describe('WebhookTargets', () => {
  const targets = (allowPrivate: boolean) =>
    new WebhookTargets(AppConfigService.fromEnv({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: String(allowPrivate), DNS_SERVERS: undefined }));

  it('checks IP literals without DNS, IPv4 forms and mapped IPv6 included', async () => {
    const strict = targets(false);
    await expect(strict.addressesOf(parseWebhookUrl('http://0x7f.1/'))).rejects.toThrow('127.0.0.1 is a loopback address');
    await expect(strict.addressesOf(parseWebhookUrl('http://[::ffff:169.254.169.254]/'))).rejects.toThrow(
      '::ffff:a9fe:a9fe is a link-local address',
    );
    await expect(strict.addressesOf(parseWebhookUrl('http://LocalHost./'))).rejects.toThrow('localhost. is a loopback name');
    expect(await strict.addressesOf(parseWebhookUrl('https://93.184.215.14/'))).toEqual([{ address: '93.184.215.14', family: 4 }]);
    expect(await strict.addressesOf(parseWebhookUrl('https://[2606:4700:4700::1111]/'))).toEqual([
      { address: '2606:4700:4700::1111', family: 6 },
    ]);
  });

  it('checks nothing when private networks are allowed', async () => {
    expect(await targets(true).addressesOf(parseWebhookUrl('http://127.0.0.1:8080/'))).toBeNull();
  });
});
