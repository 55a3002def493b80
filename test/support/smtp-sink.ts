import type { AddressInfo, Socket } from 'node:net';
import { ParsedMail, simpleParser } from 'mailparser';
import { SMTPServer, SMTPServerDataStream, SMTPServerSession } from 'smtp-server';

export interface ReceivedMail {
  envelope: { mailFrom: string; rcptTo: string[] };
  /** The message exactly as it arrived. */
  raw: Buffer;
  /** Parsed with mailparser (absent when the sink was started with parse: false). */
  parsed?: ParsedMail;
  /** Date.now() when the sink answered 250 to the message. */
  receivedAt: number;
  /** The user name the client authenticated with (sinks started with `auth: true`): tells senders apart. */
  user?: string;
}

export interface SmtpSink {
  /** smtp://127.0.0.1:<port>, for SMTP_URL. */
  url: string;
  port: number;
  messages: ReceivedMail[];
  /** Messages taken (250) so far, parsed or not. */
  readonly count: number;
  /** The most connections that were open at once since the sink started. */
  readonly peakConnections: number;
  /** The next `count` messages get `code message` at the end of DATA (451 → retried, 550 → bounced). */
  failNext(count: number, code: number, message?: string): void;
  /** RCPT TO for this address gets `code message` until cleared. */
  rejectRecipient(address: string, code: number, message?: string): void;
  /** MAIL FROM with this address gets `code message` until cleared (the provider refusing the sender). */
  rejectSender(address: string | RegExp, code: number, message?: string): void;
  /** Clears the recipient and sender rejections. */
  clearRejections(): void;
  /**
   * Sinks started with `auth: true`: while on, every AUTH gets `535 5.7.8` (a wrong SMTP password); turning it on
   * also closes the open connections, so that the next message has to authenticate again.
   */
  rejectAuth(on: boolean): void;
  /**
   * Holds the answer to the next message's DATA: `arrived` resolves once its content is in, and the sink answers
   * (250, or a failNext answer) only after release().
   */
  holdNext(): { arrived: Promise<void>; release: () => void };
  /** While on, every connection is dropped as it opens, and the open ones at once (a provider that is down). */
  refuseConnections(on: boolean): void;
  /** Resolves with the first message (already received or to come) that matches. */
  waitFor(predicate: (mail: ReceivedMail) => boolean, timeoutMs?: number): Promise<ReceivedMail>;
  close(): Promise<void>;
}

function smtpError(code: number, message: string): Error & { responseCode: number } {
  return Object.assign(new Error(message), { responseCode: code });
}

/**
 * A real SMTP server in the test process (smtp-server), recording the envelope, the raw source and the
 * parsed message of everything it accepts; it can be told to answer 4xx/5xx.
 */
export async function startSmtpSink(options: { parse?: boolean; auth?: boolean } = {}): Promise<SmtpSink> {
  const parse = options.parse ?? true;
  const messages: ReceivedMail[] = [];
  const waiters: { predicate: (mail: ReceivedMail) => boolean; resolve: (mail: ReceivedMail) => void }[] = [];
  const failures: { code: number; message: string }[] = [];
  const rejections = new Map<string, { code: number; message: string }>();
  const senderRejections = new Map<string | RegExp, { code: number; message: string }>();
  const holds: { arrive: () => void; released: Promise<void> }[] = [];
  let authRejected = false;
  let refusing = false;
  let count = 0;
  let peakConnections = 0;

  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: options.auth ? ['STARTTLS'] : ['STARTTLS', 'AUTH'],
    allowInsecureAuth: true,
    logger: false,
    size: 60 * 1024 * 1024,
    onAuth(auth, _session, callback) {
      if (authRejected) return callback(smtpError(535, '5.7.8 Authentication credentials invalid'));
      callback(null, { user: auth.username });
    },
    onMailFrom(address, _session, callback) {
      const sender = address.address.toLowerCase();
      const rejection = [...senderRejections].find(([match]) => (typeof match === 'string' ? match === sender : match.test(sender)))?.[1];
      callback(rejection ? smtpError(rejection.code, rejection.message) : undefined);
    },
    onRcptTo(address, _session, callback) {
      const rejection = rejections.get(address.address.toLowerCase());
      callback(rejection ? smtpError(rejection.code, rejection.message) : undefined);
    },
    onData(stream: SMTPServerDataStream, session: SMTPServerSession, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      const receive = async () => {
        const hold = holds.shift();
        if (hold) {
          hold.arrive();
          await hold.released;
        }
        const failure = failures.shift();
        if (failure) return callback(smtpError(failure.code, failure.message));
        count++;
        const receivedAt = Date.now();
        const raw = Buffer.concat(chunks);
        const envelope = {
          mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          rcptTo: session.envelope.rcptTo.map((r) => r.address),
        };
        callback(null, 'OK queued');
        if (!parse) return;
        void simpleParser(raw).then((parsed) => {
          const mail = { envelope, raw, parsed, receivedAt, user: session.user as string | undefined };
          messages.push(mail);
          for (const waiter of [...waiters]) {
            if (waiter.predicate(mail)) {
              waiters.splice(waiters.indexOf(waiter), 1);
              waiter.resolve(mail);
            }
          }
        });
      };
      stream.on('end', () => void receive());
    },
  });
  // A client that vanishes mid-session (a SIGKILLed worker) resets its connection: not the sink's failure.
  server.on('error', () => undefined);
  const sockets = new Set<Socket>();
  server.server.on('connection', (socket: Socket) => {
    if (refusing) return socket.destroy();
    sockets.add(socket);
    peakConnections = Math.max(peakConnections, sockets.size);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.server.address() as AddressInfo;

  return {
    url: `smtp://127.0.0.1:${port}`,
    port,
    messages,
    get count() {
      return count;
    },
    get peakConnections() {
      return peakConnections;
    },
    failNext: (n, code, message = code >= 500 ? '5.1.1 Mailbox unavailable' : '4.3.0 Try again later') => {
      for (let i = 0; i < n; i++) failures.push({ code, message });
    },
    rejectRecipient: (address, code, message = code >= 500 ? '5.1.1 No such user' : '4.2.1 Mailbox busy') => {
      rejections.set(address.toLowerCase(), { code, message });
    },
    rejectSender: (address, code, message = code >= 500 ? '5.7.1 Sender not allowed' : '4.7.1 Try again later') => {
      senderRejections.set(typeof address === 'string' ? address.toLowerCase() : address, { code, message });
    },
    clearRejections: () => {
      rejections.clear();
      senderRejections.clear();
    },
    rejectAuth: (on) => {
      authRejected = on;
      if (on) for (const socket of sockets) socket.destroy();
    },
    refuseConnections: (on) => {
      refusing = on;
      if (on) for (const socket of sockets) socket.destroy();
    },
    holdNext: () => {
      let arrive!: () => void;
      let release!: () => void;
      const arrived = new Promise<void>((resolve) => (arrive = resolve));
      holds.push({ arrive, released: new Promise<void>((resolve) => (release = resolve)) });
      return { arrived, release };
    },
    waitFor: (predicate, timeoutMs = 20_000) => {
      const found = messages.find(predicate);
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no matching mail arrived within ${timeoutMs} ms`)), timeoutMs);
        waiters.push({ predicate, resolve: (mail) => (clearTimeout(timer), resolve(mail)) });
      });
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
