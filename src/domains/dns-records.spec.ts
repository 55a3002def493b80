import { createPublicKey } from 'node:crypto';
import { dkimSelectorFor, dnsRecordsFor, generateDkimKey } from './dns-records';

describe('DNS records', () => {
  it('lists verification, DKIM, SPF and DMARC records for the domain', () => {
    const records = dnsRecordsFor({
      domain: 'example.com',
      verificationRecord: 'svc-verification=abc',
      dkimSelector: 'mr202611',
      dkimPublicKey: 'MIIB',
      spfMechanism: 'include:spf.provider.test',
    });
    expect(records.map(({ purpose, name, value, required }) => [purpose, name, value, required])).toEqual([
      ['verification', 'example.com', 'svc-verification=abc', true],
      ['dkim', 'mr202611._domainkey.example.com', 'v=DKIM1; k=rsa; p=MIIB', true],
      ['spf', 'example.com', 'v=spf1 include:spf.provider.test ~all', false],
      ['dmarc', '_dmarc.example.com', 'v=DMARC1; p=none; adkim=r; aspf=r', false],
    ]);
  });

  it('dates the DKIM selector by UTC month', () => {
    expect(dkimSelectorFor(new Date('2026-01-31T23:30:00Z'))).toBe('mr202601');
    expect(dkimSelectorFor(new Date('2026-11-01T00:00:00Z'))).toBe('mr202611');
  });

  it('makes an RSA-2048 key whose public half is base64 DER SPKI', async () => {
    const { privateKeyPem, publicKeyBase64 } = await generateDkimKey();
    expect(privateKeyPem).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    const publicKey = createPublicKey({ key: Buffer.from(publicKeyBase64, 'base64'), format: 'der', type: 'spki' });
    expect(publicKey.asymmetricKeyType).toBe('rsa');
    expect(publicKey.asymmetricKeyDetails?.modulusLength).toBe(2048);
  });
});
