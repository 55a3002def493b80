import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { newId } from '../../common/ids';
import { AppConfigService } from '../../config/app-config.service';
import { DomainsService } from '../../domains/domains.service';
import { ForwardFailureReporter, ForwardFailureReports } from '../../email/forward-failure-reports';
import { SuppressionService } from '../../suppression/suppression.service';
import { immediateMessage, OutboxService } from '../../outbox/outbox.service';
import { Message } from '../../outbox/message.entity';
import { dsnContent, DSN_SUBJECT, FailedRecipient } from './dsn-message';
import { DsnSubject, failedAddresses, notifiable, OriginalHeaders } from './dsn-rules';

/** Messages with failures left unreported, taken per sweep. */
const SWEEP_PAGE = 200;
/** Reports of a message that failed before its failures are given up on (marked reported, no notification, logged). */
const MAX_REPORT_ATTEMPTS = 5;
/** Enough of a received message to hold any header section worth returning (RFC 5322 headers are seldom over 16 KB). */
const HEADER_BYTES = 64 * 1024;

interface FailureRow {
  recipient: string;
  status: string;
  diagnostic: string;
  failed_at: Date;
}

/** What the sender is owed: the headers for its notification, or why it gets none. */
type Owed = { headers: OriginalHeaders } | { headers: null; why: string };

interface SubjectRow {
  account_id: string;
  subject: string;
  header_message_id: string;
  envelope_from: string | null;
  mail_from: string;
  mail_from_authenticated: boolean;
  domain: string;
  aliases: string[];
  arrived_at: Date;
  head: Buffer | null;
  head_is_whole: boolean;
}

/**
 * Delivery status notifications (RFC 3464) for forwarded mail: a forwarded message's destinations that will not get
 * it (forward_failures, written with the move that says so) are reported to the envelope sender of the message
 * received, from MAILER-DAEMON@INBOUND_SMTP_HOSTNAME with the null sender, as Mailroom's own mail (systemSender: signed
 * only by a verified domain of that name, never counted against the account). The notification is accepted as any
 * message, in the transaction that marks the failures reported: made once, never lost (sweep() takes what a dead
 * process left). Delivery, below forwarding, calls it through ForwardFailureReports.
 */
@Injectable()
export class DsnService implements ForwardFailureReporter {
  private readonly logger = new Logger(DsnService.name);
  private readonly reportingMta: string;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly outbox: OutboxService,
    private readonly suppression: SuppressionService,
    private readonly domains: DomainsService,
    config: AppConfigService,
    reports: ForwardFailureReports,
  ) {
    this.reportingMta = config.inboundHostname.toLowerCase();
    // In the constructor, not a lifecycle hook: registered before any delivery job can run.
    reports.register(this);
  }

  /**
   * Reports the message's unreported failures, if any. Never rejects: what fails here is left to sweep(), up to
   * MAX_REPORT_ATTEMPTS times.
   */
  async report(messageId: string): Promise<void> {
    try {
      // Read before the transaction: it holds its connection, and nothing in it may wait for another one.
      const subject = await this.subjectOf(messageId);
      if (!subject) return; // not forwarded mail: nothing is ever recorded for it
      const owed = await this.owed(subject);
      const made = await this.dataSource.transaction((manager) => this.reportWithin(manager, messageId, subject, owed));
      if (made) this.outbox.queueDelivery(made);
    } catch (err) {
      await this.countFailedReport(messageId, err as Error);
    }
  }

  /**
   * Reports the failures recorded before `olderThan` still unreported (their report() never ran, or failed), the
   * messages with the oldest first, `page` of them; how many messages.
   */
  async sweep(olderThan: Date, page = SWEEP_PAGE): Promise<number> {
    const rows: { message_id: string }[] = await this.dataSource.query(
      'SELECT message_id FROM forward_failures WHERE reported_at IS NULL AND failed_at < $1 ' +
        'GROUP BY message_id ORDER BY min(failed_at), message_id LIMIT $2',
      [olderThan, page],
    );
    for (const { message_id } of rows) await this.report(message_id);
    return rows.length;
  }

  /**
   * Counts a report of the message that failed; at the MAX_REPORT_ATTEMPTS-th its failures are marked reported with
   * no notification (an error logged), so that a message that can never be reported does not hold every sweep's page.
   * While the database is unreachable nothing is counted: the next sweep tries again.
   */
  private async countFailedReport(messageId: string, error: Error): Promise<void> {
    const counted: { given_up: boolean }[] | null = await this.dataSource
      .query(
        'UPDATE forward_failures SET report_attempts = report_attempts + 1, ' +
          'reported_at = CASE WHEN report_attempts + 1 >= $2 THEN now() END ' +
          'WHERE message_id = $1 AND reported_at IS NULL RETURNING reported_at IS NOT NULL AS given_up',
        [messageId, MAX_REPORT_ATTEMPTS],
      )
      .then((result: [{ given_up: boolean }[], number]) => result[0])
      .catch(() => null);
    if (counted?.some((row) => row.given_up)) {
      this.logger.error(
        `Gave up telling the sender of ${messageId} about ${counted.length} failed destination(s) after ${MAX_REPORT_ATTEMPTS} ` +
          `attempts: ${error.message}`,
      );
    } else {
      this.logger.warn(`Could not report the failures of ${messageId} to its sender (the sweep will): ${error.message}`);
    }
  }

  /**
   * Locks the failures (a concurrent report of the same message waits, then finds them reported), makes the
   * notification (none when none is owed) and marks them reported, in one commit.
   */
  private async reportWithin(manager: EntityManager, messageId: string, subject: DsnSubject, owed: Owed): Promise<Message | null> {
    const failures: FailureRow[] = await manager.query(
      'SELECT recipient, status, diagnostic, failed_at FROM forward_failures WHERE message_id = $1 AND reported_at IS NULL ' +
        'ORDER BY failed_at, recipient FOR UPDATE',
      [messageId],
    );
    if (failures.length === 0) return null;
    const message = owed.headers && this.notification(subject, owed.headers, failures);
    if (message) await this.outbox.acceptWithin(manager, { messages: [{ message, events: [{ type: 'queued' }] }], metering: null });
    else this.logger.debug(`No delivery status notification for ${messageId}: ${'why' in owed ? owed.why : ''}`);
    await manager.query(
      'UPDATE forward_failures SET reported_at = now(), dsn_message_id = $3 WHERE message_id = $1 AND recipient = ANY($2::varchar[])',
      [messageId, failures.map((f) => f.recipient), message?.id ?? null],
    );
    return message;
  }

  /** The message received, as far as the notification needs it; null when the message is no forward (or gone). */
  private async subjectOf(messageId: string): Promise<DsnSubject | null> {
    const rows: SubjectRow[] = await this.dataSource.query(
      'SELECT m.account_id, m.subject, m.header_message_id, m.envelope_from, i.mail_from, i.mail_from_authenticated, i.domain, ' +
        'i.recipients AS aliases, ' +
        'i.created_at AS arrived_at, substring(i.source from 1 for $2) AS head, octet_length(i.source) <= $2 AS head_is_whole ' +
        'FROM messages m JOIN inbound_messages i ON i.id = m.inbound_message_id WHERE m.id = $1',
      [messageId, HEADER_BYTES],
    );
    if (rows.length === 0) return null;
    const row = rows[0];
    const domain = await this.domains.findVerified(row.account_id, row.domain);
    return {
      accountId: row.account_id,
      sender: row.envelope_from ? row.mail_from : '',
      senderAuthenticated: row.mail_from_authenticated,
      aliases: row.aliases,
      rules: domain?.settings.forwarding,
      arrivedAt: row.arrived_at,
      head: row.head,
      headIsWhole: Boolean(row.head_is_whole),
      subject: row.subject,
      messageId: row.header_message_id,
    };
  }

  /**
   * The original headers when its sender is owed a notification; none for a null sender, an automatic message, a
   * sender not authenticated (a notification to a forged MAIL FROM is backscatter), a suppressed one.
   */
  private async owed(subject: DsnSubject): Promise<Owed> {
    const headers = notifiable(subject);
    if (headers === null) return { headers: null, why: 'its sender takes none (a null sender, or an automatic message)' };
    if (!subject.senderAuthenticated) {
      return {
        headers: null,
        why: `its envelope sender <${subject.sender}> was not authenticated (no SPF pass, no DKIM pass aligned with it)`,
      };
    }
    const suppressed = await this.suppression.suppressedAmong(subject.accountId, [subject.sender]);
    return suppressed.size > 0 ? { headers: null, why: 'its sender is on the suppression list' } : { headers };
  }

  /** The notification's message. */
  private notification(subject: DsnSubject, headers: OriginalHeaders, failures: FailureRow[]): Message {
    const failed: FailedRecipient[] = failedAddresses(
      subject,
      failures.map((f) => ({ recipient: f.recipient, status: f.status, diagnostic: f.diagnostic, lastAttemptAt: new Date(f.failed_at) })),
    );
    const id = newId('msg');
    const content = dsnContent({
      reportingMta: this.reportingMta,
      sender: subject.sender,
      arrivedAt: new Date(subject.arrivedAt),
      failed,
      originalHeaders: headers.section,
      originalMessageId: headers.messageId ?? subject.messageId,
      originalSubject: subject.subject,
      date: new Date(),
    });
    return immediateMessage(subject.accountId, id, {
      fromAddress: content.from.address,
      fromDomain: this.reportingMta,
      systemSender: true,
      // The null sender: a notification is never answered by another (RFC 5321 6.1).
      envelopeFrom: '',
      inboundMessageId: null,
      subject: DSN_SUBJECT,
      recipients: [subject.sender],
      suppressedRecipients: [],
      headerMessageId: `<${id.slice(4)}@${this.reportingMta}>`,
      content,
    });
  }
}
