import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { SecretBox } from '../../src/common/crypto/secret-box';
import { newId } from '../../src/common/ids';
import { Domain } from '../../src/domains/domain.entity';
import type { TestDnsServer } from './dns-server';
import type { TestApp } from './test-app';

export interface VerifiedDomain {
  name: string;
  selector: string;
  /** Base64 DER public key: the p= of the DKIM record. */
  publicKey: string;
}

/**
 * A verified sending domain of the account, inserted directly (as the domains feature would after a
 * successful verification) with a fresh DKIM key; its DKIM TXT record is published on `dns` when given.
 */
export async function createVerifiedDomain(t: TestApp, accountId: string, name: string, dns?: TestDnsServer): Promise<VerifiedDomain> {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const selector = 'mr1';
  const publicDer = publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
  await t.app
    .get(DataSource)
    .getRepository(Domain)
    .insert({
      id: newId('dom'),
      accountId,
      name,
      status: 'verified',
      verificationToken: randomBytes(16).toString('hex'),
      dkimSelector: selector,
      dkimPrivateKey: t.app.get(SecretBox).seal(privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()),
      dkimPublicKey: publicDer,
      settings: {},
      verifiedAt: new Date(),
    });
  dns?.setTxt(`${selector}._domainkey.${name}`, `v=DKIM1; k=rsa; p=${publicDer}`);
  return { name, selector, publicKey: publicDer };
}
