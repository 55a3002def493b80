import { promises as dns } from 'node:dns';
import { Injectable } from '@nestjs/common';
import { AppConfigService } from '../config/app-config.service';

/** Outcome of looking a verification record up. */
export type TxtCheck = { found: true } | { found: false; reason: string };

const TRIES = 2;
const NO_RECORD = new Set(['ENOTFOUND', 'ENODATA', 'NXDOMAIN']);

/** Reads TXT records through DNS_SERVERS, or the system's resolvers when it is empty. */
@Injectable()
export class DnsVerifier {
  constructor(private readonly config: AppConfigService) {}

  /** Whether `name` carries a TXT record equal to `expected` (multi-string records are joined first). */
  async hasTxt(name: string, expected: string): Promise<TxtCheck> {
    // A resolver per check: a stuck query of one request never holds another's (and setServers is cheap).
    const resolver = new dns.Resolver({ timeout: this.config.env.DNS_TIMEOUT_MS, tries: TRIES });
    if (this.config.dnsServers.length > 0) resolver.setServers(this.config.dnsServers);
    let records: string[][];
    try {
      records = await resolver.resolveTxt(name);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'UNKNOWN';
      if (NO_RECORD.has(code)) return { found: false, reason: `No TXT record found at ${name}` };
      return { found: false, reason: `DNS lookup of ${name} failed (${code}); try again later` };
    }
    const values = records.map((chunks) => chunks.join(''));
    if (values.some((value) => value.trim() === expected)) return { found: true };
    const ours = values.filter((value) => value.startsWith(expected.split('=')[0] + '='));
    return {
      found: false,
      reason: ours.length ? `The TXT record at ${name} holds another token: ${ours.join(', ')}` : `No TXT record "${expected}" at ${name}`,
    };
  }
}
