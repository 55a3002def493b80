import { once } from 'node:events';
import { connect, Socket } from 'node:net';
import { connect as tlsConnect, PeerCertificate, TLSSocket } from 'node:tls';

/**
 * A raw SMTP client over a socket to 127.0.0.1 (from a chosen loopback address if asked), STARTTLS included: each
 * command resolves with the server's whole reply.
 */
export class SmtpSession {
  private buffered = '';
  private readonly waiting: ((reply: string) => void)[] = [];
  private readonly replies: string[] = [];
  private socket: Socket | TLSSocket;

  private constructor(socket: Socket) {
    this.socket = socket;
    this.listen(socket);
    socket.on('error', () => undefined);
  }

  /** Connects (from `localAddress`: any 127.0.0.0/8 address is this host) and reads the greeting. */
  static async open(port: number, localAddress?: string): Promise<{ session: SmtpSession; greeting: string }> {
    const session = new SmtpSession(connect({ port, host: '127.0.0.1', ...(localAddress ? { localAddress } : {}) }));
    return { session, greeting: await session.reply() };
  }

  /** The next reply (multi-line replies whole, CRLF-terminated). */
  reply(): Promise<string> {
    const ready = this.replies.shift();
    if (ready) return Promise.resolve(ready);
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  command(line: string): Promise<string> {
    this.socket.write(`${line}\r\n`);
    return this.reply();
  }

  /**
   * STARTTLS, then the TLS handshake for `servername` (any certificate taken, as MX clients do): the certificate the
   * server presented.
   */
  async startTls(servername: string): Promise<PeerCertificate> {
    const answer = await this.command('STARTTLS');
    if (!answer.startsWith('220 ')) throw new Error(`STARTTLS refused: ${answer}`);
    this.socket.removeAllListeners('data');
    const secure = tlsConnect({ socket: this.socket, servername, rejectUnauthorized: false });
    await once(secure, 'secureConnect');
    this.socket = secure;
    this.listen(secure);
    return secure.getPeerCertificate();
  }

  /** Raw bytes (a message's content in DATA), resolved once they are written. */
  write(bytes: Buffer): Promise<void> {
    return new Promise((resolve, reject) => this.socket.write(bytes, (err) => (err ? reject(err) : resolve())));
  }

  close(): void {
    this.socket.destroy();
  }

  private listen(socket: Socket): void {
    socket.on('data', (data: Buffer) => {
      this.buffered += data.toString('latin1');
      for (let match; (match = /^(?:\d{3}-[^\n]*\n)*\d{3} [^\n]*\n/.exec(this.buffered));) {
        this.buffered = this.buffered.slice(match[0].length);
        const waiter = this.waiting.shift();
        if (waiter) waiter(match[0]);
        else this.replies.push(match[0]);
      }
    });
  }
}
