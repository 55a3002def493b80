import { promises as dnsPromises } from 'node:dns';
import { AddressInfo, isIPv4, isIPv6 } from 'node:net';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const dns2 = require('dns2');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { authenticate } = require('mailauth');

const { Packet } = dns2;
const MAX_STRING = 255;

export interface TestDnsServer {
  /** host:port, for DNS_SERVERS. */
  address: string;
  /** Publishes a TXT record (replacing earlier ones of that name); long values are split into 255-byte strings. */
  setTxt(name: string, ...values: string[]): void;
  removeTxt(name: string): void;
  /**
   * Makes every question about `name` fail: answered SERVFAIL (a resolver's temporary error at once), or never
   * answered ('silent': the resolver waits until its time-out). `null` answers it from the tables again.
   */
  setFailure(name: string, failure: 'servfail' | 'silent' | null): void;
  /** Answers A and AAAA questions for `name` with these addresses (replacing earlier ones); none removes the name. */
  setAddresses(name: string, ...addresses: string[]): void;
  /** The DKIM results of a received message, verified independently (mailauth) against this server's records. */
  dkimResults(raw: Buffer | string, sender: string): Promise<DkimResult[]>;
  close(): Promise<void>;
}

/** One signature of a message as mailauth judged it. */
export interface DkimResult {
  signingDomain: string;
  selector: string;
  status: { result: string };
}

/** A real DNS server on loopback (UDP) answering TXT, A and AAAA questions from tables the test controls. */
export async function startDnsServer(): Promise<TestDnsServer> {
  const records = new Map<string, string[]>();
  const hosts = new Map<string, string[]>();
  const failures = new Map<string, 'servfail' | 'silent'>();
  const server = dns2.createServer({
    udp: true,
    handle: (request: any, send: (response: any) => void) => {
      const response = Packet.createResponseFromRequest(request);
      const [question] = request.questions;
      const failure = question && failures.get(question.name.toLowerCase());
      if (failure === 'silent') return;
      if (failure === 'servfail') {
        response.header.rcode = 2;
        return send(response);
      }
      const addressFamily = question?.type === Packet.TYPE.A ? isIPv4 : question?.type === Packet.TYPE.AAAA ? isIPv6 : undefined;
      if (addressFamily) {
        const addresses = hosts.get(question.name.toLowerCase());
        if (!addresses) response.header.rcode = 3; // NXDOMAIN; a name without addresses of this family gets no answers
        for (const address of (addresses ?? []).filter((a) => addressFamily(a))) {
          response.answers.push({ name: question.name, type: question.type, class: Packet.CLASS.IN, ttl: 1, address });
        }
        return send(response);
      }
      const values = question && question.type === Packet.TYPE.TXT ? records.get(question.name.toLowerCase()) : undefined;
      if (!values) response.header.rcode = 3; // NXDOMAIN
      for (const value of values ?? []) {
        const chunks: string[] = [];
        for (let i = 0; i < value.length; i += MAX_STRING) chunks.push(value.slice(i, i + MAX_STRING));
        response.answers.push({ name: question.name, type: Packet.TYPE.TXT, class: Packet.CLASS.IN, ttl: 1, data: chunks });
      }
      send(response);
    },
  });
  await server.listen({ udp: { port: 0, address: '127.0.0.1' } });
  const { port } = server.addresses().udp as AddressInfo;
  const address = `127.0.0.1:${port}`;
  const resolver = new dnsPromises.Resolver();
  resolver.setServers([address]);
  return {
    address,
    setTxt: (name, ...values) => records.set(name.toLowerCase(), values),
    removeTxt: (name) => records.delete(name.toLowerCase()),
    setFailure: (name, failure) => (failure ? failures.set(name.toLowerCase(), failure) : failures.delete(name.toLowerCase())),
    setAddresses: (name, ...addresses) => (addresses.length ? hosts.set(name.toLowerCase(), addresses) : hosts.delete(name.toLowerCase())),
    dkimResults: async (raw, sender) => {
      const result = await authenticate(raw, {
        ip: '127.0.0.1',
        helo: 'localhost',
        sender,
        resolver: (name: string, type: string) => resolver.resolve(name, type as 'TXT'),
      });
      return result.dkim.results as DkimResult[];
    },
    close: () => server.close(),
  };
}
