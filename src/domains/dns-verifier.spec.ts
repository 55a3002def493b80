import { createSocket } from 'node:dgram';
import { AppConfigService } from '../config/app-config.service';
import { startDnsServer, TestDnsServer } from '../../test/support/dns-server';
import { DnsVerifier } from './dns-verifier';

describe('DnsVerifier', () => {
  let dns: TestDnsServer;
  let verifier: DnsVerifier;

  beforeAll(async () => {
    dns = await startDnsServer();
    verifier = new DnsVerifier(AppConfigService.fromEnv({ NODE_ENV: 'test', DNS_SERVERS: dns.address }));
  });
  afterAll(() => dns.close());

  it('finds the record among others, joining a record split into several strings', async () => {
    const long = `svc-verification=${'a'.repeat(300)}`;
    dns.setTxt('example.test', 'v=spf1 -all', long);
    await expect(verifier.hasTxt('example.test', long)).resolves.toEqual({ found: true });
  });

  it('says whether the name has no record or another token', async () => {
    await expect(verifier.hasTxt('missing.test', 'svc-verification=x')).resolves.toEqual({
      found: false,
      reason: 'No TXT record found at missing.test',
    });
    dns.setTxt('other.test', 'svc-verification=old');
    await expect(verifier.hasTxt('other.test', 'svc-verification=new')).resolves.toEqual({
      found: false,
      reason: 'The TXT record at other.test holds another token: svc-verification=old',
    });
  });

  it('reports a resolver that does not answer as a failed lookup', async () => {
    // A UDP port that is bound but never answers: the lookup times out.
    const silent = createSocket('udp4');
    await new Promise<void>((resolve) => silent.bind(0, '127.0.0.1', resolve));
    const { port } = silent.address();
    const mute = new DnsVerifier(AppConfigService.fromEnv({ NODE_ENV: 'test', DNS_SERVERS: `127.0.0.1:${port}`, DNS_TIMEOUT_MS: '200' }));
    try {
      const result = await mute.hasTxt('example.test', 'svc-verification=x');
      expect(result).toEqual({ found: false, reason: expect.stringMatching(/^DNS lookup of example.test failed \(ETIMEOUT\)/) });
    } finally {
      silent.close();
    }
  });
});
