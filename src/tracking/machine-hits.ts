import { createHash } from 'node:crypto';
import * as ipaddr from 'ipaddr.js';

/** A hit this soon after the message was handed to the provider is a machine's: the mail has barely arrived. */
export const MACHINE_WINDOW_MS = 10_000;

/** Apple's own network: Mail Privacy Protection fetches every image from it as the message arrives. */
const APPLE_NETWORK = ipaddr.parseCIDR('17.0.0.0/8');

/** Link scanners and prefetchers that fetch what a message links to before (or without) a person. */
const SCANNER_AGENTS: { name: string; pattern: RegExp }[] = [
  { name: 'crawler', pattern: /bot\/|bot;|crawler|spider|\+https?:\/\/|HeadlessChrome/i },
  { name: 'HTTP library', pattern: /^(curl|Wget|python-requests|Python-urllib|aiohttp|Go-http-client|Java|okhttp|libwww-perl)\b/i },
  { name: 'Barracuda', pattern: /Barracuda/i },
  { name: 'Proofpoint', pattern: /Proofpoint/i },
  { name: 'Mimecast', pattern: /Mimecast/i },
  { name: 'Microsoft Safe Links', pattern: /BingPreview|Microsoft Office Existence Discovery/i },
  { name: 'Google link checker', pattern: /Google-Safety|GoogleOther|Google-InspectionTool/i },
];

export interface Hit {
  /** The User-Agent header, absent when none was sent. */
  userAgent: string | undefined;
  /** The client address as the request gives it (TRUST_PROXY decides), IPv4-mapped IPv6 included. */
  ip: string | undefined;
  at: Date;
}

/**
 * Why a hit on a tracking link was made by a machine rather than a person, or null for a person. Machine
 * hits are recorded all the same, flagged, so that analytics can count human opens and clicks apart.
 */
export function machineReason(hit: Hit, sentAt: Date | null): string | null {
  // Not yet recorded as sent means the hit came while the provider still had the message.
  if (sentAt === null || hit.at.getTime() - sentAt.getTime() < MACHINE_WINDOW_MS) return 'within seconds of sending';
  const agent = hit.userAgent?.trim() ?? '';
  if (agent === '') return 'no user agent';
  if (agent === 'Mozilla/5.0' || inAppleNetwork(hit.ip)) return 'Apple Mail Privacy Protection';
  // Gmail fetches images through its proxy when the person opens the message: a human open.
  if (agent.includes('GoogleImageProxy')) return null;
  return SCANNER_AGENTS.find(({ pattern }) => pattern.test(agent))?.name ?? null;
}

function inAppleNetwork(ip: string | undefined): boolean {
  if (!ip || !ipaddr.isValid(ip)) return false;
  const address = ipaddr.process(ip);
  return address.kind() === 'ipv4' && address.match(APPLE_NETWORK);
}

/**
 * Who made a hit, as far as a tracking route can tell: its network (the address; for IPv6 its /64, which one
 * device may rotate through) and its user agent, hashed. Hits of one client share it.
 */
export function clientOf(hit: Hit): string {
  return createHash('sha256')
    .update(`${networkOf(hit.ip)}\n${hit.userAgent?.trim() ?? ''}`)
    .digest('base64url')
    .slice(0, 22);
}

function networkOf(ip: string | undefined): string {
  if (!ip || !ipaddr.isValid(ip)) return ip ?? '';
  const address = ipaddr.process(ip);
  if (address.kind() === 'ipv4') return address.toString();
  return `${(address as ipaddr.IPv6).parts
    .slice(0, 4)
    .map((part) => part.toString(16))
    .join(':')}::/64`;
}
