import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { SMTPServer, SMTPServerAddress, SMTPServerDataStream, SMTPServerSession } from 'smtp-server';
import { AppConfigService } from '../config/app-config.service';
import { inboundSmtpSessions, inboundSmtpSessionsActive } from '../metrics/metrics';
import { listenError } from '../startup/startup-error';
import { ForwardingService } from './forwarding.service';
import type { InboundRoute } from './received-transaction';
import { InboundRefusal } from './inbound-refusal';
import { InboundRateLimits } from './inbound-rate-limits';
import { InboundTls } from './inbound-tls';
import { MessageSpool } from './message-spool';
import { declaredSizeRefusal, messageTooBig } from './message-size';

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
 * committed. STARTTLS with the configured certificate or a self-signed one (InboundTls); no AUTH (it is an MX, not a
 * submission server). Sessions are capped per client address and in all, messages per sender and per domain an hour
 * (InboundRateLimits); a message over 256 KB is spooled to disk while it arrives (MessageSpool).
 */
@Injectable()
export class InboundSmtpServer implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(InboundSmtpServer.name);
  private server?: SMTPServer;
  /** Each session's routes for the transaction under way, in RCPT order. */
  private readonly routes = new Map<string, InboundRoute[]>();
  /** Each session's domains that passed the hourly limits at RCPT TO in the transaction under way: counted at its commit. */
  private readonly limitedDomains = new Map<string, Set<string>>();
  private readonly connectionsByAddress = new Map<string, number>();
  /** Sessions counted in connectionsByAddress (a refused connection never was). */
  private readonly counted = new Map<string, string>();
  private readonly spool: MessageSpool;

  constructor(
    private readonly forwarding: ForwardingService,
    private readonly config: AppConfigService,
    private readonly tlsCredentials: InboundTls,
    private readonly limits: InboundRateLimits,
  ) {
    this.spool = new MessageSpool(config.env.INBOUND_SMTP_SPOOL_DIR ?? tmpdir());
  }

  /** The port it listens on. */
  get port(): number {
    return (this.server?.server.address() as AddressInfo | null)?.port ?? 0;
  }

  async onApplicationBootstrap(): Promise<void> {
    const { env } = this.config;
    const tls = await this.tlsCredentials.credentials();
    await this.spool.prepare();
    this.server = new SMTPServer({
      name: this.config.inboundHostname,
      banner: 'Mailroom ESMTP',
      size: env.INBOUND_SMTP_MAX_MESSAGE_BYTES,
      // smtp-server's own check of MAIL FROM's SIZE= answers 552 without an enhanced code; onMailFrom answers 552 5.3.4.
      // Hiding the number is the only way to turn its check off: EHLO says SIZE without it.
      hideSize: true,
      authOptional: true,
      disabledCommands: tls ? ['AUTH'] : ['AUTH', 'STARTTLS'],
      ...(tls ? { key: tls.key, cert: tls.cert } : {}),
      socketTimeout: env.INBOUND_SMTP_TIMEOUT_MS,
      closeTimeout: CLOSE_TIMEOUT_MS,
      // A reverse lookup per connection costs a DNS round trip before the greeting; the Received header does without.
      disableReverseLookup: true,
      logger: false,
      onConnect: (session, callback) => this.onConnect(session, callback),
      onClose: (session) => this.onClose(session),
      onMailFrom: (address, session, callback) => this.onMailFrom(address, session, callback),
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
    const starttls = tls ? ` (STARTTLS, ${tls.source} certificate ${tls.fingerprint})` : ' (no STARTTLS)';
    this.logger.log(`Inbound SMTP listening on ${env.INBOUND_SMTP_HOST}:${this.port}${starttls}`);
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

  private onMailFrom(address: SMTPServerAddress, session: SMTPServerSession, callback: Callback): void {
    const tooBig = declaredSizeRefusal(address.args, this.config.env.INBOUND_SMTP_MAX_MESSAGE_BYTES);
    if (tooBig) return callback(tooBig);
    this.routes.set(session.id, []);
    this.limitedDomains.set(session.id, new Set());
    callback();
  }

  private onClose(session: SMTPServerSession): void {
    this.routes.delete(session.id);
    this.limitedDomains.delete(session.id);
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
      const route = await this.forwarding.route(address.address);
      await this.checkLimits(route, session);
      routes.push(route);
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
        if (!source) throw messageTooBig(maxBytes);
        const ids = await this.forwarding.receive({
          mailFrom: senderOf(session),
          routes: this.routes.get(session.id) ?? [],
          source,
          clientAddress: session.remoteAddress,
          clientHostname: session.clientHostname,
          helo: session.hostNameAppearsAs ?? '',
          secure: session.secure,
        });
        await this.countCommitted(session);
        return ids;
      })
      .then(
        (ids) => callback(null, `2.0.0 Ok: queued as ${ids.join(',') || 'none'}`),
        (err) => callback(this.refusal(err, 'DATA')),
      );
  }

  /**
   * Checks the message against its forwarding domain's hourly limits at its first recipient there, counting nothing: a
   * transaction that never sends its DATA (RSET, a dropped connection) or whose message is refused spends no allowance.
   * A bounce to a VERP return path is not limited: it reports on mail sent from here. 451 4.7.1 past a limit.
   */
  private async checkLimits(route: InboundRoute, session: SMTPServerSession): Promise<void> {
    if (route.kind === 'report') return;
    const domain = route.domain.name.toLowerCase();
    const checked = this.limitedDomains.get(session.id) ?? new Set<string>();
    if (checked.has(domain)) return;
    await this.limits.check({ sender: senderOf(session), clientAddress: session.remoteAddress, domain });
    checked.add(domain);
    this.limitedDomains.set(session.id, checked);
  }

  /** Counts a committed message once per domain it passed the limits for; never rejects (the message is taken). */
  private async countCommitted(session: SMTPServerSession): Promise<void> {
    const domains = [...(this.limitedDomains.get(session.id) ?? [])];
    const messages = domains.map((domain) => ({ sender: senderOf(session), clientAddress: session.remoteAddress, domain }));
    await this.limits
      .count(messages)
      .catch((err: Error) => this.logger.warn(`Could not count a message against the hourly limits: ${err.message}`));
  }

  /** Our refusal as it is; anything else (the database is down) a 451 the client retries later, logged. */
  private refusal(err: unknown, stage: string): Error {
    if (err instanceof InboundRefusal) return err;
    this.logger.error(`Inbound ${stage} failed: ${(err as Error).message}`);
    return new InboundRefusal(451, '4.3.0 Temporary failure, try again later');
  }
}

/** MAIL FROM; '' for a bounce. */
function senderOf(session: SMTPServerSession): string {
  return session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
}
