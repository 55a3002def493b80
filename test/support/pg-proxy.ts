import { createServer, connect, type Server, type Socket } from 'node:net';
import { TEST_DATABASE_SERVER } from './test-env';

type Mode = 'forward' | 'starting-up' | 'silent';

/** A client connection forwarded to PostgreSQL. */
interface Link {
  client: Socket;
  /** Answers from PostgreSQL held back from the client, while this link is held. */
  held: Buffer[] | null;
}

interface Hold {
  marker: string;
  answerMarker: string;
  link?: Link;
  answered: () => void;
}

/**
 * A TCP proxy in front of the machine's PostgreSQL: the app and the driver are as real as ever, and the test
 * watches and disturbs the traffic.
 * - Watching: `count()` counts the statements containing a marker; `holdAnswer()` holds back the answer to one
 *   statement (a slow network or a busy server, made on purpose) until `release()`.
 * - Outages, without stopping the machine's server: `refuse()` closes the port (connection refused) and cuts
 *   open connections, `dropConnections()` cuts them (terminated mid-query), `startingUp()` answers new
 *   connections with FATAL 57P03 as a server in recovery does, `silent()` accepts and never answers;
 *   `forward()` ends the outage.
 */
export class PgProxy {
  private mode: Mode = 'forward';
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  private readonly counts = new Map<string, number>();
  private hold: Hold | null = null;
  private readonly target = new URL(TEST_DATABASE_SERVER);

  private constructor(private port: number) {}

  static async start(): Promise<PgProxy> {
    const proxy = new PgProxy(0);
    await proxy.listen();
    return proxy;
  }

  /** The server URL of the proxy for `database`, with the real server's user. */
  url(database: string): string {
    const url = new URL(TEST_DATABASE_SERVER);
    url.host = `127.0.0.1:${this.port}`;
    url.pathname = `/${database}`;
    return url.toString();
  }

  /** Starts counting the statements whose text contains marker. */
  count(marker: string): () => number {
    this.counts.set(marker, 0);
    return () => this.counts.get(marker) ?? 0;
  }

  /**
   * Holds back PostgreSQL's answer to the next statement containing marker; resolves once that answer,
   * containing answerMarker, has arrived at the proxy (the statement ran: its snapshot is taken).
   */
  holdAnswer(marker: string, answerMarker: string): Promise<void> {
    return new Promise((answered) => {
      this.hold = { marker, answerMarker, answered };
    });
  }

  /** Lets the held answer through. */
  release(): void {
    const link = this.hold?.link;
    this.hold = null;
    if (!link?.held) return;
    const held = link.held;
    link.held = null;
    for (const data of held) link.client.write(data);
  }

  async forward(): Promise<void> {
    this.mode = 'forward';
    if (!this.server) await this.listen();
  }

  startingUp(): void {
    this.mode = 'starting-up';
  }

  silent(): void {
    this.mode = 'silent';
  }

  dropConnections(): void {
    for (const socket of this.sockets) socket.destroy();
  }

  async refuse(): Promise<void> {
    const server = this.server;
    this.server = null;
    this.dropConnections();
    if (server) await new Promise((resolve) => server.close(resolve));
  }

  close(): Promise<void> {
    this.release();
    return this.refuse();
  }

  /** Listens on the port it had before, if any: a refused server comes back where the app expects it. */
  private listen(): Promise<void> {
    const server = createServer((client) => this.accept(client));
    this.server = server;
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => {
        this.port = (server.address() as { port: number }).port;
        resolve();
      });
    });
  }

  private track(socket: Socket): void {
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  }

  private accept(client: Socket): void {
    this.track(client);
    if (this.mode === 'silent') return;
    if (this.mode === 'starting-up') {
      // PostgreSQL reads the startup packet, then refuses it with an ErrorResponse.
      client.once('data', () => client.end(fatal('57P03', 'the database system is starting up')));
      return;
    }
    const server = connect(Number(this.target.port || 5432), this.target.hostname);
    this.track(server);
    const link: Link = { client, held: null };
    client.on('data', (data) => {
      this.inspect(link, data.toString('latin1'));
      server.write(data);
    });
    server.on('data', (data) => {
      if (!link.held) return void client.write(data);
      link.held.push(data);
      const hold = this.hold;
      if (hold?.link === link && Buffer.concat(link.held).toString('latin1').includes(hold.answerMarker)) hold.answered();
    });
    client.on('close', () => server.destroy());
    server.on('close', () => client.destroy());
  }

  /** Counts a statement from the client, and holds its link if it is the one to hold. */
  private inspect(link: Link, text: string): void {
    for (const marker of this.counts.keys()) {
      if (text.includes(marker)) this.counts.set(marker, (this.counts.get(marker) ?? 0) + 1);
    }
    if (this.hold && !this.hold.link && text.includes(this.hold.marker)) {
      this.hold.link = link;
      link.held = [];
    }
  }
}

/** A protocol-3 ErrorResponse message of severity FATAL. */
function fatal(code: string, message: string): Buffer {
  const fields = Buffer.concat([
    ...[
      ['S', 'FATAL'],
      ['V', 'FATAL'],
      ['C', code],
      ['M', message],
    ].map(([type, value]) => Buffer.from(`${type}${value}\0`)),
    Buffer.from([0]),
  ]);
  const header = Buffer.alloc(5);
  header.write('E', 0);
  header.writeInt32BE(fields.length + 4, 1);
  return Buffer.concat([header, fields]);
}
