import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { SMTPServer, SMTPServerAddress, SMTPServerDataStream, SMTPServerSession } from 'smtp-server';
import { AppConfigService } from '../config/app-config.service';
import { inboundSmtpSessions, inboundSmtpSessionsActive } from '../metrics/metrics';
import { listenError } from '../startup/startup-error';
import { ForwardingService, InboundRefusal, InboundRoute } from './forwarding.service';
import { MessageSpool } from './message-spool';

/** RFC 5321 4.5.3.1.8: a server must take at least 100 recipients per message; more get 452. */
const MAX_RECIPIENTS = 100;
/** On shutdown, a transaction under way gets this long to finish before its connection is closed. */
const CLOSE_TIMEOUT_MS = 5000;

type Callback = (err?: Error | null) => void;
type DataCallback = (err?: Error | null, message?: string) => void;

/**
 * The inbound SMTP server (D-31), run by workers: takes mail only for addresses something is done with (a
 * forwarding rule of a verified domain, an SRS address of one, a VERP return path), refusing others at RCPT TO,
 * so that nothing is accepted and bounced later. A 250 at the end of DATA is given only once the message is
 * committed. STARTTLS when a certificate is configured; no AUTH (it is an MX, not a submission server). Sessions are
 * capped per client address and in all; a message over 256 KB is spooled to disk while it arrives (MessageSpool).
 */
@Injectable()
export class InboundSmtpServer implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(InboundSmtpServer.name);
  private server?: SMTPServer;
  /** Each session's routes for the transaction under way, in RCPT order. */
  private readonly routes = new Map<string, InboundRoute[]>();
  private readonly connectionsByAddress = new Map<string, number>();
  /** Sessions counted in connectionsByAddress (a refused connection never was). */
  private readonly counted = new Map<string, string>();
  private readonly spool: MessageSpool;

  constructor(
    private readonly forwarding: ForwardingService,
    private readonly config: AppConfigService,
  ) {
    this.spool = new MessageSpool(config.env.INBOUND_SMTP_SPOOL_DIR ?? tmpdir());
  }

  /** The port it listens on. */
  get port(): number {
    return (this.server?.server.address() as AddressInfo | null)?.port ?? 0;
  }

  async onApplicationBootstrap(): Promise<void> {
    const { env } = this.config;
    const tls = env.INBOUND_SMTP_TLS_CERT && env.INBOUND_SMTP_TLS_KEY;
    await this.spool.prepare();
    this.server = new SMTPServer({
      name: this.config.inboundHostname,
      banner: 'Mailroom ESMTP',
      size: env.INBOUND_SMTP_MAX_MESSAGE_BYTES,
      authOptional: true,
      disabledCommands: tls ? ['AUTH'] : ['AUTH', 'STARTTLS'],
      ...(tls ? { key: readFileSync(env.INBOUND_SMTP_TLS_KEY!), cert: readFileSync(env.INBOUND_SMTP_TLS_CERT!) } : {}),
      socketTimeout: env.INBOUND_SMTP_TIMEOUT_MS,
      closeTimeout: CLOSE_TIMEOUT_MS,
      // A reverse lookup per connection costs a DNS round trip before the greeting; the Received header does without.
      disableReverseLookup: true,
      logger: false,
      onConnect: (session, callback) => this.onConnect(session, callback),
      onClose: (session) => this.onClose(session),
      onMailFrom: (_address, session, callback) => {
        this.routes.set(session.id, []);
        callback();
      },
      onRcptTo: (address, session, callback) => void this.onRcptTo(address, session, callback),
      onData: (stream, session, callback) => this.onData(stream, session, callback),
    });
    this.server.on('error', (err) => this.logger.warn(`Inbound SMTP connection error: ${err.message}`));
    await new Promise<void>((resolve, reject) => {
      this.server!.server.once('error', (err) => reject(listenError(err, 'INBOUND_SMTP_PORT', env.INBOUND_SMTP_PORT) ?? err));
      this.server!.listen(env.INBOUND_SMTP_PORT, env.INBOUND_SMTP_HOST, () => {
        this.server!.server.off('error', reject);
        resolve();
      });
    });
    this.logger.log(`Inbound SMTP listening on ${env.INBOUND_SMTP_HOST}:${this.port}${tls ? ' (STARTTLS)' : ''}`);
  }

  /** Takes no new session; a transaction under way gets CLOSE_TIMEOUT_MS, while the stores are still open. */
  async beforeApplicationShutdown(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private onConnect(session: SMTPServerSession, callback: Callback): void {
    const address = session.remoteAddress;
    const open = this.connectionsByAddress.get(address) ?? 0;
    if (open >= this.config.env.INBOUND_SMTP_MAX_CONNECTIONS_PER_IP) {
      inboundSmtpSessions.inc({ result: 'refused' });
      return callback(new InboundRefusal(421, `4.7.0 Too many connections from ${address}, try again later`));
    }
    if (this.counted.size >= this.config.env.INBOUND_SMTP_MAX_CONNECTIONS) {
      inboundSmtpSessions.inc({ result: 'refused' });
      return callback(new InboundRefusal(421, '4.7.0 Too many connections, try again later'));
    }
    this.connectionsByAddress.set(address, open + 1);
    this.counted.set(session.id, address);
    inboundSmtpSessions.inc({ result: 'accepted' });
    inboundSmtpSessionsActive.inc();
    callback();
  }

  private onClose(session: SMTPServerSession): void {
    this.routes.delete(session.id);
    const address = this.counted.get(session.id);
    if (address === undefined) return;
    this.counted.delete(session.id);
    inboundSmtpSessionsActive.dec();
    const open = (this.connectionsByAddress.get(address) ?? 1) - 1;
    if (open > 0) this.connectionsByAddress.set(address, open);
    else this.connectionsByAddress.delete(address);
  }

  private async onRcptTo(address: SMTPServerAddress, session: SMTPServerSession, callback: Callback): Promise<void> {
    const routes = this.routes.get(session.id) ?? [];
    if (routes.length >= MAX_RECIPIENTS) return callback(new InboundRefusal(452, '4.5.3 Too many recipients'));
    try {
      routes.push(await this.forwarding.route(address.address));
      this.routes.set(session.id, routes);
      callback();
    } catch (err) {
      callback(this.refusal(err, `RCPT TO:<${address.address}>`));
    }
  }

  private onData(stream: SMTPServerDataStream, session: SMTPServerSession, callback: DataCallback): void {
    const maxBytes = this.config.env.INBOUND_SMTP_MAX_MESSAGE_BYTES;
    this.spool
      .receive(stream, maxBytes, async (source) => {
        if (!source) throw new InboundRefusal(552, `5.3.4 Message too big: the limit is ${maxBytes} bytes`);
        return this.forwarding.receive({
          mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          routes: this.routes.get(session.id) ?? [],
          source,
          clientAddress: session.remoteAddress,
          clientHostname: session.clientHostname,
          helo: session.hostNameAppearsAs ?? '',
          secure: session.secure,
        });
      })
      .then(
        (ids) => callback(null, `2.0.0 Ok: queued as ${ids.join(',') || 'none'}`),
        (err) => callback(this.refusal(err, 'DATA')),
      );
  }

  /** Our refusal as it is; anything else (the database is down) a 451 the client retries later, logged. */
  private refusal(err: unknown, stage: string): Error {
    if (err instanceof InboundRefusal) return err;
    this.logger.error(`Inbound ${stage} failed: ${(err as Error).message}`);
    return new InboundRefusal(451, '4.3.0 Temporary failure, try again later');
  }
}
