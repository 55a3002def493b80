import { generateKeyPair } from 'node:crypto';
import { promisify } from 'node:util';

export type DnsRecordPurpose = 'verification' | 'dkim' | 'spf' | 'dmarc';

/** A record the customer publishes at their DNS host. */
export interface DnsRecord {
  purpose: DnsRecordPurpose;
  type: 'TXT';
  name: string;
  value: string;
  /** Verification and DKIM are needed; SPF and DMARC are recommendations (merge SPF into an existing record). */
  required: boolean;
}

export interface DnsRecordInput {
  domain: string;
  verificationRecord: string;
  dkimSelector: string;
  dkimPublicKey: string;
  spfMechanism: string;
}

/** The records of D-30, in the order a user publishes them. */
export function dnsRecordsFor(input: DnsRecordInput): DnsRecord[] {
  return [
    { purpose: 'verification', type: 'TXT', name: input.domain, value: input.verificationRecord, required: true },
    {
      purpose: 'dkim',
      type: 'TXT',
      name: `${input.dkimSelector}._domainkey.${input.domain}`,
      value: `v=DKIM1; k=rsa; p=${input.dkimPublicKey}`,
      required: true,
    },
    { purpose: 'spf', type: 'TXT', name: input.domain, value: `v=spf1 ${input.spfMechanism} ~all`, required: false },
    { purpose: 'dmarc', type: 'TXT', name: `_dmarc.${input.domain}`, value: 'v=DMARC1; p=none; adkim=r; aspf=r', required: false },
  ];
}

/** `mr<yyyymm>`: dated, so that a later key rotation gets a new selector next to the old one. */
export function dkimSelectorFor(date: Date): string {
  return `mr${date.getUTCFullYear()}${String(date.getUTCMonth() + 1).padStart(2, '0')}`;
}

const generateRsaKeyPair = promisify(generateKeyPair);

/** A fresh RSA-2048 DKIM key: PKCS#8 PEM private key, and the public key as base64 DER SPKI (the p= value). */
export async function generateDkimKey(): Promise<{ privateKeyPem: string; publicKeyBase64: string }> {
  const { privateKey, publicKey } = await generateRsaKeyPair('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'der' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  return { privateKeyPem: privateKey, publicKeyBase64: publicKey.toString('base64') };
}
