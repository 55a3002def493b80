import { promises as dns } from 'node:dns';
import { isIP } from 'node:net';
import { Injectable } from '@nestjs/common';
import { AppConfigService } from '../config/app-config.service';
import { isLocalhostName, refusedAddressKind } from './webhook-address';

export interface TargetAddress {
  address: string;
  family: 4 | 6;
}

/** A URL a webhook may not be given, or a delivery may not go to; the message says why. */
export class TargetRefused extends Error {}

const NO_RECORD = new Set(['ENOTFOUND', 'ENODATA', 'NXDOMAIN']);

export const MAX_URL_LENGTH = 2048;

/** The URL if it may be a webhook's (http or https, no credentials); else TargetRefused. Addresses are checked apart. */
export function parseWebhookUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new TargetRefused('is not a valid URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new TargetRefused(`must use http or https, not ${url.protocol.slice(0, -1)}`);
  if (url.username || url.password) throw new TargetRefused('must not contain a user name or password');
  if (url.href.length > MAX_URL_LENGTH) throw new TargetRefused(`must be at most ${MAX_URL_LENGTH} characters once encoded`);
  return url;
}

/**
 * SSRF defence (D-23). Unless WEBHOOK_ALLOW_PRIVATE_NETWORKS is set, a webhook's host must be, or resolve (A and
 * AAAA, through DNS_SERVERS like domain verification) to, public unicast addresses only: at registration, and
 * again at every attempt, whose connection then goes to the addresses checked (see webhook-http.ts), so that
 * DNS cannot answer differently between the check and the connect (rebinding).
 */
@Injectable()
export class WebhookTargets {
  constructor(private readonly config: AppConfigService) {}

  get allowsPrivateNetworks(): boolean {
    return this.config.env.WEBHOOK_ALLOW_PRIVATE_NETWORKS;
  }

  /**
   * The checked addresses to connect to for `url`; null when private networks are allowed (the system resolves,
   * /etc/hosts included, and nothing is checked). TargetRefused says why an address may not be used.
   */
  async addressesOf(url: URL, signal?: AbortSignal): Promise<TargetAddress[] | null> {
    if (this.allowsPrivateNetworks) return null;
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    const family = isIP(host);
    if (family) {
      const refused = refusedAddressKind(host);
      if (refused) throw new TargetRefused(`${host} is ${refused}`);
      return [{ address: host, family: family as 4 | 6 }];
    }
    if (isLocalhostName(host)) throw new TargetRefused(`${host} is a loopback name`);
    const addresses = await this.resolve(host, signal);
    for (const { address } of addresses) {
      const refused = refusedAddressKind(address);
      if (refused) throw new TargetRefused(`${host} resolves to ${address}, ${refused}`);
    }
    return addresses;
  }

  private async resolve(host: string, signal?: AbortSignal): Promise<TargetAddress[]> {
    const resolver = new dns.Resolver({ timeout: this.config.env.DNS_TIMEOUT_MS, tries: 2 });
    if (this.config.dnsServers.length > 0) resolver.setServers(this.config.dnsServers);
    const cancel = () => resolver.cancel();
    signal?.addEventListener('abort', cancel, { once: true });
    try {
      const [v4, v6] = await Promise.allSettled([resolver.resolve4(host), resolver.resolve6(host)]);
      const addresses: TargetAddress[] = [
        ...(v4.status === 'fulfilled' ? v4.value.map((address) => ({ address, family: 4 as const })) : []),
        ...(v6.status === 'fulfilled' ? v6.value.map((address) => ({ address, family: 6 as const })) : []),
      ];
      if (addresses.length > 0) return addresses;
      const failure = [v4, v6]
        .map((outcome) => (outcome.status === 'rejected' ? ((outcome.reason as NodeJS.ErrnoException).code ?? 'UNKNOWN') : null))
        .find((code) => code && !NO_RECORD.has(code));
      throw new TargetRefused(failure ? `the DNS lookup of ${host} failed (${failure})` : `${host} does not resolve to any address`);
    } finally {
      signal?.removeEventListener('abort', cancel);
    }
  }
}
