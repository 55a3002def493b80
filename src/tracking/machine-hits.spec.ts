import { clientOf, Hit, MACHINE_WINDOW_MS, machineReason } from './machine-hits';

const sentAt = new Date('2030-01-01T10:00:00Z');
const later = new Date(sentAt.getTime() + 60_000);
const DESKTOP = 'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36';
const hit = (userAgent: string | undefined, ip = '203.0.113.7', at = later): Hit => ({ userAgent, ip, at });

describe('machineReason', () => {
  it('takes a browser or mail client after the first seconds for a person', () => {
    expect(machineReason(hit(DESKTOP), sentAt)).toBeNull();
    expect(
      machineReason(
        hit('Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148'),
        sentAt,
      ),
    ).toBeNull();
    expect(machineReason(hit('Microsoft Office/16.0 (Windows NT 10.0; Microsoft Outlook 16.0.17928; Pro)'), sentAt)).toBeNull();
  });

  it('flags any hit within MACHINE_WINDOW of sending, and one before the message is recorded as sent', () => {
    expect(machineReason(hit(DESKTOP, undefined, new Date(sentAt.getTime() + MACHINE_WINDOW_MS - 1)), sentAt)).toBe(
      'within seconds of sending',
    );
    expect(machineReason(hit(DESKTOP, undefined, new Date(sentAt.getTime() + MACHINE_WINDOW_MS)), sentAt)).toBeNull();
    expect(machineReason(hit(DESKTOP), null)).toBe('within seconds of sending');
  });

  it('flags Apple Mail Privacy Protection: the bare Mozilla/5.0 agent, or an address in 17.0.0.0/8 (IPv4-mapped too)', () => {
    expect(machineReason(hit('Mozilla/5.0'), sentAt)).toBe('Apple Mail Privacy Protection');
    expect(machineReason(hit(DESKTOP, '17.58.101.4'), sentAt)).toBe('Apple Mail Privacy Protection');
    expect(machineReason(hit(DESKTOP, '::ffff:17.1.2.3'), sentAt)).toBe('Apple Mail Privacy Protection');
    expect(machineReason(hit(DESKTOP, '18.0.0.1'), sentAt)).toBeNull();
    expect(machineReason(hit(DESKTOP, '2001:db8::17'), sentAt)).toBeNull();
  });

  it('flags a missing or empty user agent', () => {
    expect(machineReason(hit(undefined), sentAt)).toBe('no user agent');
    expect(machineReason(hit('  '), sentAt)).toBe('no user agent');
  });

  it('flags known scanners, prefetchers and HTTP libraries', () => {
    const agents: [string, string][] = [
      ['Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)', 'crawler'],
      ['Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/120.0 Safari/537.36', 'crawler'],
      ['curl/8.5.0', 'HTTP library'],
      ['python-requests/2.31.0', 'HTTP library'],
      ['Go-http-client/1.1', 'HTTP library'],
      ['Barracuda Sentinel (EE)', 'Barracuda'],
      ['Mozilla/5.0 Proofpoint URL Defense', 'Proofpoint'],
      ['Mimecast-URL-Protect/1.0', 'Mimecast'],
      ['Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) BingPreview/1.0b', 'Microsoft Safe Links'],
      ['Google-Safety', 'Google link checker'],
    ];
    for (const [agent, reason] of agents) expect([agent, machineReason(hit(agent), sentAt)]).toEqual([agent, reason]);
  });

  it('takes Gmail’s image proxy for a person: it fetches when the message is opened', () => {
    const gmail = 'Mozilla/5.0 (Windows NT 5.1; rv:11.0) Gecko Firefox/11.0 (via ggpht.com GoogleImageProxy)';
    expect(machineReason(hit(gmail, '66.249.84.1'), sentAt)).toBeNull();
  });
});

describe('clientOf', () => {
  it('is the same for hits of one address and user agent, whenever they come', () => {
    expect(clientOf(hit(DESKTOP, '203.0.113.7'))).toBe(clientOf(hit(DESKTOP, '203.0.113.7', sentAt)));
    expect(clientOf(hit(DESKTOP, '::ffff:203.0.113.7'))).toBe(clientOf(hit(DESKTOP, '203.0.113.7')));
    expect(clientOf(hit(DESKTOP, '2001:db8:1:2:aaaa::1'))).toBe(clientOf(hit(DESKTOP, '2001:db8:1:2:bbbb::9')));
  });

  it('tells apart other addresses, other IPv6 /64s and other user agents', () => {
    const one = clientOf(hit(DESKTOP, '203.0.113.7'));
    expect(clientOf(hit(DESKTOP, '203.0.113.8'))).not.toBe(one);
    expect(clientOf(hit('Mozilla/5.0', '203.0.113.7'))).not.toBe(one);
    expect(clientOf(hit(undefined, '203.0.113.7'))).not.toBe(one);
    expect(clientOf(hit(DESKTOP, '2001:db8:1:3::1'))).not.toBe(clientOf(hit(DESKTOP, '2001:db8:1:2::1')));
  });
});
