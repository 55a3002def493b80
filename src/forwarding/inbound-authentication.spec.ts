import { createSocket, Socket } from 'node:dgram';
import { authenticate } from 'mailauth';
import { budgetedResolver } from './inbound-authentication';
import { senderAuthentication } from './sender-authentication';

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
    const signature =
      'DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d=slow.test; s=s1; h=from; bh=47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=; b=AAAA';
    const source = Buffer.from(`${signature}\r\nFrom: boss@slow.test\r\nSubject: hi\r\n\r\n`);
    const result = await authenticate(source, {
      ip: '192.0.2.1',
      sender: 'boss@slow.test',
      mta: 'mx.test',
      resolver: budgetedResolver([server], timeoutMs, 2),
      disableBimi: true,
    });
    const elapsed = Date.now() - started;
    // Unbounded, the DKIM key, SPF and DMARC lookups would wait a time-out each (and c-ares retries them).
    expect(elapsed).toBeLessThan(2 * timeoutMs + 300);
    expect(result.spf && result.spf.status.result).toBe('temperror');
    expect(result.dmarc && result.dmarc.status.result).toBe('temperror');
    expect(senderAuthentication(result).author).toBe('unknown');
  });
});
