import { createPrivateKey, X509Certificate } from 'node:crypto';
import { SELF_SIGNED_VALIDITY_DAYS, selfSignedCertificate } from './inbound-tls';

describe('selfSignedCertificate', () => {
  it('makes an RSA certificate for the host name, its key matching, valid for years from a day ago', async () => {
    const now = new Date(Date.UTC(2026, 10, 27));
    const made = await selfSignedCertificate('mx.example.test', now);
    const certificate = new X509Certificate(made.cert);
    expect(certificate.subject).toBe('CN=mx.example.test');
    expect(certificate.subjectAltName).toBe('DNS:mx.example.test');
    expect(certificate.checkPrivateKey(createPrivateKey(made.key))).toBe(true);
    expect(certificate.publicKey.asymmetricKeyType).toBe('rsa');
    expect(new Date(certificate.validFrom).getTime()).toBe(now.getTime() - 86_400_000);
    expect(new Date(certificate.validTo).getTime()).toBe(now.getTime() + SELF_SIGNED_VALIDITY_DAYS * 86_400_000);
    expect(made.notAfter.getTime()).toBe(new Date(certificate.validTo).getTime());
  });
});
