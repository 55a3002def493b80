import { generateKeyPairSync } from 'node:crypto';
import { createSocket, Socket } from 'node:dgram';
import { authenticate, dkimSign } from 'mailauth';
import { startDnsServer } from '../../test/support/dns-server';
import { AppConfigService } from '../config/app-config.service';
import type { Domain } from '../domains/domain.entity';
import type { DomainsService } from '../domains/domains.service';
import { budgetedResolver, InboundAuthentication, InboundVerdict } from './inbound-authentication';
import { InboundRefusal } from './inbound-refusal';
import { refusalOf, senderAuthentication } from './sender-authentication';

describe('the DNS lookups of inbound authentication', () => {
  let silent: Socket;
  let server: string;

  beforeAll(async () => {
    // A DNS server that takes every question and never answers.
    silent = createSocket('udp4');
    await new Promise<void>((resolve) => silent.bind(0, '127.0.0.1', resolve));
    server = `127.0.0.1:${silent.address().port}`;
  });

  afterAll(() => silent.close());

  it('gives all lookups of a message a few query time-outs in all, then fails the rest at once (temporary errors)', async () => {
    const timeoutMs = 200;
    const started = Date.now();
    // Five signatures (the body hash is the empty body's), each key lookup waiting a time-out unless the budget stops it.
    const signatures = [1, 2, 3, 4, 5].map(
      (n) =>
        `DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d=slow${n}.test; s=s1; h=from; bh=47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=; b=AAAA\r\n`,
    );
    const source = Buffer.from(`${signatures.join('')}From: boss@slow.test\r\nSubject: hi\r\n\r\n`);
    const result = await authenticate(source, {
      ip: '192.0.2.1',
      sender: 'boss@slow.test',
      mta: 'mx.test',
      resolver: budgetedResolver([server], timeoutMs, 2),
      disableBimi: true,
    });
    const elapsed = Date.now() - started;
    // Unbounded, the five DKIM keys, SPF and DMARC would wait a time-out each (7); the budget gives them 2, and the
    // DMARC record one of its own.
    expect(elapsed).toBeLessThan(3 * timeoutMs + 500);
    expect(result.spf && result.spf.status.result).toBe('temperror');
    expect(result.dmarc && result.dmarc.status.result).toBe('temperror');
    expect(senderAuthentication(result).author).toBe('unknown');
  });

  it('still reads the DMARC record when slow lookups of the sender’s own making spent the budget', async () => {
    const dns = await startDnsServer();
    try {
      dns.setTxt('_dmarc.victim.test', 'v=DMARC1; p=reject');
      const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 1024 });
      const unsigned = Buffer.from('From: ceo@victim.test\r\nSubject: wire the money\r\n\r\nNow.\r\n');
      // Signatures whose key lookups are never answered: each one waits a time-out.
      const signatureData = ['slow1.attacker.test', 'slow2.attacker.test'].map((signingDomain) => {
        dns.setFailure(`s1._domainkey.${signingDomain}`, 'silent');
        return { signingDomain, selector: 's1', privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }) };
      });
      const { signatures } = await dkimSign(unsigned, { ...signatureData[0], signatureData });
      const result = await authenticate(Buffer.concat([Buffer.from(signatures), unsigned]), {
        ip: '192.0.2.1',
        sender: 'bounce@attacker.test',
        mta: 'mx.test',
        resolver: budgetedResolver([dns.address], 200, 2),
        disableBimi: true,
      });
      expect(result.dkim.results.map((r) => r.status.result)).toEqual(['temperror', 'temperror']);
      expect(result.dmarc && [result.dmarc.status.result, result.dmarc.policy]).toEqual(['fail', 'reject']);
      expect(refusalOf(senderAuthentication(result), ['fwd.test'])).toEqual({
        responseCode: 550,
        message: expect.stringMatching(/^5\.7\.1 .*victim\.test .*p=reject/),
      });
    } finally {
      await dns.close();
    }
  });
});

describe('the forwarded copy', () => {
  it('refuses for good (550 5.7.1) a copy the forwarding domain would sign without having authenticated its author', async () => {
    const authentication = new InboundAuthentication(AppConfigService.fromEnv({ INBOUND_SMTP_HOSTNAME: 'mx.test' }), {} as DomainsService);
    const verdict: InboundVerdict = {
      sender: { fromAddresses: ['boss@fwd.test'], organizationalDomain: 'fwd.test', author: 'fail', policy: 'reject', alignedDkim: false },
      authenticationResults: '',
      arc: null,
      refusal: null,
      envelopeSenderAuthenticated: false,
    };
    const source = Buffer.from('From: boss@fwd.test\r\n\r\nHi\r\n');
    const copy = authentication.copyFor(verdict, { name: 'fwd.test' } as Domain, source, { name: '', address: 'boss@fwd.test' });
    await expect(copy).rejects.toBeInstanceOf(InboundRefusal);
    await expect(copy).rejects.toMatchObject({ responseCode: 550, message: expect.stringMatching(/^5\.7\.1 /) });
  });
});
