import { randomBytes } from 'node:crypto';
import { createServer, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { TestDnsServer, startDnsServer } from '../support/dns-server';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount } from '../support/factories';
import { SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';

const PUBLIC_ADDRESS = '93.184.215.14';

/** D-23 without WEBHOOK_ALLOW_PRIVATE_NETWORKS: private targets refused at registration and, after DNS rebinding, at delivery. */
describe('webhooks: SSRF protection', () => {
  let t: TestApp;
  let dns: TestDnsServer;
  let sink: SmtpSink;
  let receiver: Server;
  let port: number;
  const requests: string[] = [];
  let owner: { accountId: string; adminKey: string };
  const domain = `${randomBytes(4).toString('hex')}.ssrf.test`;

  beforeAll(async () => {
    dns = await startDnsServer();
    sink = await startSmtpSink();
    receiver = createServer((req, res) => {
      requests.push(req.url ?? '');
      res.end('ok');
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    port = (receiver.address() as AddressInfo).port;
    t = await createTestApp({
      env: {
        SMTP_URL: sink.url,
        DNS_SERVERS: dns.address,
        DNS_TIMEOUT_MS: '500',
        WEBHOOK_POLL_INTERVAL_MS: '50',
        WEBHOOK_RETRY_SCHEDULE: '100ms',
      },
    });
    owner = await createAccount(t, 'Careful');
    await createVerifiedDomain(t, owner.accountId, domain);
  });

  afterAll(async () => {
    await t.close();
    await sink.close();
    await dns.close();
    await new Promise((resolve) => receiver.close(resolve));
  });

  const register = (url: string) =>
    t.http
      .post('/email/webhooks')
      .set(bearer(owner.adminKey))
      .send({ url, events: ['sent'] });

  it.each([
    ['IPv4 loopback', () => `http://127.0.0.1:${port}/hook`, '127.0.0.1 is a loopback address'],
    ['IPv6 loopback', () => `http://[::1]:${port}/hook`, '::1 is a loopback address'],
    ['a private address', () => 'http://10.0.0.1/hook', '10.0.0.1 is a private address'],
    ['the cloud metadata address', () => 'http://169.254.169.254/latest/meta-data/', '169.254.169.254 is a link-local address'],
    ['IPv4-mapped IPv6 loopback', () => `http://[::ffff:127.0.0.1]:${port}/hook`, '::ffff:7f00:1 is a loopback address'],
    ['localhost', () => `http://localhost:${port}/hook`, 'localhost is a loopback name'],
    [
      'a name resolving to a private address',
      () => 'https://intranet.ssrf.test/hook',
      'intranet.ssrf.test resolves to 192.168.1.1, a private address',
    ],
    [
      'a name with one private address among public ones',
      () => 'https://mixed.ssrf.test/hook',
      'mixed.ssrf.test resolves to fd00::7, a unique-local address',
    ],
    ['a name that does not resolve', () => 'https://nowhere.ssrf.test/hook', 'nowhere.ssrf.test does not resolve to any address'],
  ])('refuses %s', async (_label, url, message) => {
    dns.setAddresses('intranet.ssrf.test', '192.168.1.1');
    dns.setAddresses('mixed.ssrf.test', PUBLIC_ADDRESS, 'fd00::7');
    const res = await register(url()).expect(400);
    expect(res.body).toEqual({
      error: { code: 'VALIDATION_FAILED', message: expect.any(String), details: { fields: [{ field: 'url', message }] } },
      documentation: expect.any(String),
    });
  });

  it('accepts a name resolving to public addresses, and refuses to deliver once it resolves to loopback (rebinding)', async () => {
    dns.setAddresses('rebind.ssrf.test', PUBLIC_ADDRESS);
    const created = await register(`http://rebind.ssrf.test:${port}/hook`).expect(201);
    // The receiver runs on 127.0.0.1:port: connecting to what DNS says now would reach it.
    dns.setAddresses('rebind.ssrf.test', '127.0.0.1');

    await t.http
      .post('/email/send')
      .set(bearer(owner.adminKey))
      .send({ from: `hello@${domain}`, to: 'ada@example.org', subject: 'rebind', text: 'x' })
      .expect(200);

    const deadline = Date.now() + 15_000;
    let delivery: { status: string; attempts: { statusCode: number | null; error: string | null; succeeded: boolean }[] } | undefined;
    while (delivery?.status !== 'failed') {
      if (Date.now() > deadline) throw new Error(`the delivery did not fail: ${JSON.stringify(delivery)}`);
      await new Promise((resolve) => setTimeout(resolve, 25));
      [delivery] = (
        await t.http.get(`/email/webhooks/${created.body.id}/deliveries`).set(bearer(owner.adminKey)).expect(200)
      ).body.deliveries;
    }
    const refusal = { statusCode: null, error: 'rebind.ssrf.test resolves to 127.0.0.1, a loopback address', succeeded: false };
    expect(delivery.attempts).toEqual([expect.objectContaining(refusal), expect.objectContaining(refusal)]);
    expect(requests).toEqual([]);
  });
});
