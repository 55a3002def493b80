import type { Queue } from 'bull';
import nodemailer, { type SentMessageInfo, type Transporter } from 'nodemailer';
import { DataSource } from 'typeorm';
import { DsnService } from '../../src/forwarding/dsn/dsn.service';
import { EmailQueue } from '../../src/outbox/email.queue';
import { startDnsServer, TestDnsServer } from './dns-server';
import { createVerifiedDomain } from './email-fixtures';
import { bearer, createAccount } from './factories';
import { freePort } from './free-port';
import { rawMessage } from './raw-message';
import { ReceivedMail, SmtpSink, startSmtpSink } from './smtp-sink';
import { createTestApp, TestApp } from './test-app';
import { waitFor, waitForValue } from './wait-for';

/** The forwarding domain of the bounce suites. */
export const BOUNCE_DOMAIN = 'fwd.bounce.test';
/** INBOUND_SMTP_HOSTNAME: notifications come from MAILER-DAEMON@ it. */
export const BOUNCE_HOSTNAME = 'mx.mailroom.test';

/**
 * The app with its inbound SMTP server, the provider (an SMTP sink) behind it, a DNS server in which the senders'
 * domain origin.test authorizes the test client by SPF (forged.test publishes nothing), and one forwarding domain: what
 * the suites about delivery status notifications of forwarded mail share.
 */
export interface BounceHarness {
  t: TestApp;
  sink: SmtpSink;
  db: DataSource;
  adminKey: string;
  /** The inbound SMTP server's port. */
  port: number;
  /** Sends through the inbound server; resolves with the server's answer. */
  send(from: string, to: string[], subject: string, headers?: string[]): Promise<SentMessageInfo>;
  /** The forwarded message (the first one) with that subject, once stored. */
  forwardedMessage(subject: string): Promise<{ id: string; status: string }>;
  statusOf(messageId: string): Promise<string>;
  /** Notifications to `sender` that reached the provider. */
  notificationsTo(sender: string): ReceivedMail[];
  /** Notifications to `sender` that were made. */
  notificationRows(sender: string): Promise<{ id: string; status: string }[]>;
  /** Runs `work` while this instance's email worker takes no job. */
  whilePaused<T>(work: () => Promise<T>): Promise<T>;
  emailQueue(): Queue;
  /** Waits for the message to be final, runs the sweep as the sweeper would, and gives a stray notification time to come. */
  settle(messageId: string): Promise<void>;
  close(): Promise<void>;
}

/** Starts it with these forwarding rules of BOUNCE_DOMAIN (and any more env). */
export async function startBounceHarness(forwarding: Record<string, string[]>, env: Record<string, string> = {}): Promise<BounceHarness> {
  const sink = await startSmtpSink();
  const dns: TestDnsServer = await startDnsServer();
  dns.setTxt('origin.test', 'v=spf1 ip4:127.0.0.1 -all');
  const port = await freePort();
  const t = await createTestApp({
    env: {
      SMTP_URL: sink.url,
      DNS_SERVERS: dns.address,
      INBOUND_SMTP_PORT: String(port),
      INBOUND_SMTP_HOST: '127.0.0.1',
      INBOUND_SMTP_HOSTNAME: BOUNCE_HOSTNAME,
      // The whole 29-attempt schedule in about 9 s.
      EMAIL_RETRY_FIRST_DELAY_MS: '1',
      ...env,
    },
  });
  const db = t.app.get(DataSource);
  const account = await createAccount(t, 'Bounces');
  await createVerifiedDomain(t, account.accountId, BOUNCE_DOMAIN);
  await t.http.put(`/domains/${BOUNCE_DOMAIN}`).set(bearer(account.adminKey)).send({ forwarding }).expect(200);
  const client: Transporter = nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true });

  const statusOf = async (id: string): Promise<string> => (await db.query('SELECT status FROM messages WHERE id = $1', [id]))[0].status;
  const emailQueue = () => t.app.get(EmailQueue).queue as Queue;
  return {
    t,
    sink,
    db,
    adminKey: account.adminKey,
    port,
    send: (from, to, subject, headers = []) =>
      client.sendMail({ envelope: { from, to }, raw: rawMessage(to.join(', '), subject, { headers }) }),
    forwardedMessage: (subject) =>
      waitForValue('the forwarded message', async () => {
        const rows: { id: string; status: string }[] = await db.query(
          'SELECT id, status FROM messages WHERE subject = $1 AND inbound_message_id IS NOT NULL',
          [subject],
        );
        return rows[0];
      }),
    statusOf,
    notificationsTo: (sender) => sink.messages.filter((m) => m.envelope.rcptTo.includes(sender) && m.envelope.mailFrom === ''),
    notificationRows: (sender) =>
      db.query(`SELECT id, status FROM messages WHERE from_address = $1 AND recipients = $2::jsonb`, [
        `MAILER-DAEMON@${BOUNCE_HOSTNAME}`,
        JSON.stringify([sender]),
      ]),
    async whilePaused(work) {
      await emailQueue().pause(true);
      try {
        return await work();
      } finally {
        await emailQueue().resume(true);
      }
    },
    emailQueue,
    async settle(messageId) {
      await waitFor(
        'the forwarded message final',
        () => statusOf(messageId),
        (s) => ['sent', 'bounced', 'failed'].includes(s),
      );
      await t.app.get(DsnService).sweep(new Date());
      await new Promise((resolve) => setTimeout(resolve, 500));
    },
    async close() {
      client.close();
      await t.close();
      await sink.close();
      await dns.close();
    },
  };
}
