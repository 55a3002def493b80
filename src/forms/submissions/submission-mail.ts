import { Injectable, Logger } from '@nestjs/common';
import { isEmail } from 'class-validator';
import { AppException } from '../../common/errors/app.exception';
import { ErrorCode } from '../../common/errors/error-code';
import type { CompanionStatement, MessageWithEvents } from '../../outbox/acceptance.repository';
import { ComposedEmail, OutboxService } from '../../outbox/outbox.service';
import { TemplatesService } from '../../templates/templates.service';
import { MAX_FORM_EMAIL_BODY_BYTES } from '../emails/email-size';
import { renderAcknowledgment, renderNotification, RenderBudget, SubmissionEmailContext } from '../emails/submission-emails';
import { FormFileLinks } from '../files/file-links';
import type { Form } from '../form.entity';
import type { NotificationOptions, SubmittedFields } from '../form-submission.entity';
import { FormLanguage, formLanguage } from '../i18n/language';
import { OwnerNotification, OwnerNotifications } from '../notifications/owner-notifications';
import { attachmentsWithin, MailAttachment } from '../uploads/submission-uploads';
import { AcknowledgmentClaim, AcknowledgmentGate } from './acknowledgment-gate';
import { FormSenders } from './form-sender';
import { requestOrigin } from './origin-policy';
import {
  acceptedStatement,
  HeldSubmission,
  heldNotificationEvents,
  NewSubmission,
  notNotified,
  outboxStatement,
  SubmissionEmails,
  withNotification,
} from './submission-record';
import { ControlFields, fieldText } from './submitted-fields';

/** The longest `_subject` taken (RFC 5322's line length). */
export const MAX_SUBJECT_LENGTH = 998;

/** Said after the name of an upload of a spam submission whose bytes were not kept. */
const FILE_NOT_KEPT = 'file not kept: the submission was held as spam';

/**
 * The emails of a submission: its owner's notification (recipients on the suppression list held, not dropped) and
 * the visitor's acknowledgment, made when it is accepted or later (an instant form confirmed, a release from spam, a
 * suppression lifted). Nothing is written here: the caller accepts what it gets with the submission's statements.
 */
@Injectable()
export class SubmissionMail {
  private readonly logger = new Logger(SubmissionMail.name);

  constructor(
    private readonly outbox: OutboxService,
    private readonly templates: TemplatesService,
    private readonly senders: FormSenders,
    private readonly acknowledgments: AcknowledgmentGate,
    private readonly ownerNotifications: OwnerNotifications,
    private readonly fileLinks: FormFileLinks,
  ) {}

  /**
   * The emails of a submission accepted later than it came, with the statements that mark it accepted (if it is still
   * `from` when they commit) and send its `form.submission` event: a held one once its instant form is confirmed (its
   * uploads attached, the visitor acknowledged), or a spam one its owner released ("not spam": no acknowledgment, the
   * visitor was answered long ago; files whose bytes were not kept, all but `keptFiles`, say so by their name).
   */
  async release(
    form: Form,
    stored: HeldSubmission,
    from: 'held' | 'spam',
    keptFiles?: ReadonlySet<number>,
  ): Promise<SubmissionEmails & { statements: CompanionStatement[] }> {
    const submission = acceptedNow(form, stored);
    const files = keptFiles
      ? stored.files.map((file, i) => (keptFiles.has(i) ? file : { ...file, filename: `${file.filename} (${FILE_NOT_KEPT})` }))
      : stored.files;
    const emails = await this.emailsOf(form, { ...submission, files }, stored.heldAttachments ?? [], { acknowledge: from === 'held' });
    submission.messageIds = emails.messages.map(({ message }) => message.id);
    withNotification(submission, emails);
    return {
      ...emails,
      statements: [acceptedStatement(submission, from), outboxStatement(submission), ...heldNotificationEvents(submission)],
    };
  }

  /**
   * The notification of an accepted submission to some of its form's recipients, made later than the submission:
   * to held recipients once their suppression is lifted. No acknowledgment and no `_cc` copies (they had theirs);
   * the uploads are not attached (the stored submission lists them). Nothing is written: the caller accepts it.
   */
  async notifyOwner(form: Form, stored: HeldSubmission, recipients: string[]): Promise<OwnerNotification> {
    const emails = await this.emailsOf(form, acceptedNow(form, stored), [], { recipients, acknowledge: false });
    return { message: emails.messages[0] ?? null, held: emails.notification.held };
  }

  /**
   * The notification (and acknowledgment) of an accepted submission, recipients on the suppression list held, as
   * its post's control fields asked (`submission.notificationOptions`), whenever they are made. The acknowledgment
   * goes to one address at most once per form and hour (AcknowledgmentGate). Templates share one render budget.
   */
  async emailsOf(
    form: Form,
    submission: NewSubmission,
    attachments: MailAttachment[],
    later?: { recipients?: string[]; acknowledge: boolean },
  ): Promise<SubmissionEmails> {
    const { settings } = form;
    const options = submission.notificationOptions;
    const recipients = later?.recipients ?? settings.recipients ?? form.domain?.settings.contactRecipients;
    if (!recipients?.length) {
      throw new AppException(
        ErrorCode.Conflict,
        form.domain
          ? `The form has no recipients and ${form.domain.name} has no contactRecipients: set one with PUT /domains/${form.domain.name}`
          : 'The form has no recipients',
      );
    }
    const madeAt = new Date();
    const context: SubmissionEmailContext = {
      formName: settings.name ?? form.name,
      formId: form.id,
      domain: form.domain?.name ?? requestOrigin(submission.origin ?? undefined, undefined)?.host ?? null,
      fields: submission.fields,
      ip: submission.ip ?? '',
      timestamp: submission.createdAt.toISOString(),
      submissionId: submission.id,
      files: submission.files.map(({ filename, size }, index) => ({
        filename,
        size,
        url: this.fileLinks.url({ submissionId: submission.id, index }, madeAt),
      })),
    };
    const from = await this.senders.senderOf(form, context.formName);
    const submitter = validAddress(fieldText(submission.fields, 'email'));
    const replyTo = settings.replies === false ? undefined : (this.replyToOf(form, submission.fields, options) ?? submitter);
    const budget = new RenderBudget();

    const notificationTemplate = settings.template ? await this.templates.findForForm(form.accountId, settings.template) : null;
    const notification = renderNotification(context, {
      // The owner's email: in the language the form's page asks for (`_language`), not the visitor's browser's.
      language: options.language,
      format: options.format,
      literalSubject: options.subject,
      subject: settings.subject,
      template: notificationTemplate ?? undefined,
      budget,
      onTemplateError: (err) =>
        this.logger.warn(`Template ${settings.template} of form ${form.id} failed, the default was used: ${err.message}`),
    });
    const notificationEmail: ComposedEmail = {
      ...from,
      to: recipients,
      cc: later?.recipients ? [] : allowedCopies(options.cc, settings.ccAllowed),
      replyTo: replyTo ? [{ name: '', address: replyTo }] : [],
      ...notification,
      attachments: attachmentsWithin(
        attachments,
        MAX_FORM_EMAIL_BODY_BYTES - Buffer.byteLength(notification.text) - Buffer.byteLength(notification.html ?? ''),
      ),
    };
    const acknowledging = settings.acknowledgment?.enabled && submitter && (later?.acknowledge ?? true);
    const ackReplyTo = settings.acknowledgment?.replyTo ? [settings.acknowledgment.replyTo] : [];
    const [notified, acknowledged] = await Promise.allSettled([
      this.ownerNotifications.compose(form.accountId, notificationEmail),
      // Reply-To only an address the owner set for acknowledgments: never the owner's private notification address.
      acknowledging
        ? this.acknowledgmentOf(form, context, { ...from, to: [submitter], replyTo: ackReplyTo }, options.visitorLanguage, budget)
        : null,
    ]);
    if (notified.status === 'rejected') {
      if (acknowledged.status === 'fulfilled') await acknowledged.value?.claim.giveBack();
      throw notified.reason;
    }
    if (acknowledged.status === 'rejected') throw acknowledged.reason;
    const { message: notificationMessage, held } = notified.value;
    const messages = [notificationMessage, acknowledged.value?.message ?? null].filter((m): m is MessageWithEvents => m !== null);
    const acknowledgment = acknowledged.value?.claim ?? null;
    return { messages, acknowledgment, notification: { messageIds: notificationMessage ? [notificationMessage.message.id] : [], held } };
  }

  /**
   * The acknowledgment to the submitter with its claim, or null when the form acknowledged that address within the
   * hour, or the address is on the suppression list.
   */
  private async acknowledgmentOf(
    form: Form,
    context: SubmissionEmailContext,
    envelope: Pick<ComposedEmail, 'from' | 'systemSender' | 'to'> & { replyTo: string[] },
    language: FormLanguage | undefined,
    budget: RenderBudget,
  ): Promise<{ message: MessageWithEvents; claim: AcknowledgmentClaim } | null> {
    const ack = form.settings.acknowledgment!;
    const claim = await this.acknowledgments.claim(form.id, envelope.to[0]);
    if (!claim) return null;
    try {
      const template = ack.template ? await this.templates.findForForm(form.accountId, ack.template) : null;
      const acknowledgment = renderAcknowledgment(context, {
        language,
        subject: ack.subject,
        template: template ?? undefined,
        budget,
        onTemplateError: (err) =>
          this.logger.warn(`Template ${ack.template} of form ${form.id} failed, the default was used: ${err.message}`),
      });
      const message = await this.outbox.compose(form.accountId, {
        ...envelope,
        replyTo: envelope.replyTo.map((address) => ({ name: '', address })),
        ...acknowledgment,
      });
      if (message) return { message, claim };
    } catch (err) {
      await claim.giveBack();
      throw err;
    }
    // Nothing goes out to a suppressed address: nothing is claimed.
    await claim.giveBack();
    return null;
  }

  /** `_replyto`, else the form's replyTo (an address, or the field holding one). */
  private replyToOf(form: Form, fields: SubmittedFields, options: NotificationOptions): string | undefined {
    const fromControl = validAddress(options.replyTo);
    if (fromControl) return fromControl;
    const setting = form.settings.replyTo;
    if (!setting) return undefined;
    return setting.includes('@') ? setting : validAddress(fieldText(fields, setting));
  }
}

/** A submission accepted now, not notified yet. */
function acceptedNow(form: Form, stored: HeldSubmission): NewSubmission {
  return {
    ...stored,
    ...notNotified(),
    form,
    status: 'accepted',
    spamReason: null,
    heldAttachments: null,
    notificationOptions: stored.notificationOptions ?? {},
  };
}

/**
 * What a post's control fields ask of its emails, kept with the submission: only what passes their checks, `_cc`
 * only the addresses the form's ccAllowed lists.
 */
export function notificationOptionsOf(
  control: ControlFields,
  ccAllowed: string[] | undefined,
  acceptLanguage: string | undefined,
): NotificationOptions {
  const cc = allowedCopies(control.cc, ccAllowed);
  return {
    subject: control.subject && control.subject.length <= MAX_SUBJECT_LENGTH ? control.subject : undefined,
    replyTo: validAddress(control.replyTo),
    format: control.format,
    language: formLanguage(control.language, undefined),
    visitorLanguage: formLanguage(control.language, acceptLanguage),
    cc: cc.length ? cc : undefined,
  };
}

/** The addresses of a post's `_cc` that the form's ccAllowed lists; any other is ignored, without an error a bot could read. */
function allowedCopies(requested: string[] | undefined, allowed: string[] | undefined): string[] {
  if (!requested?.length || !allowed?.length) return [];
  const listed = new Map(allowed.map((address) => [address.toLowerCase(), address]));
  return requested.flatMap((address) => listed.get(address.toLowerCase()) ?? []);
}

export function validAddress(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed && !/[\r\n]/.test(trimmed) && isEmail(trimmed) ? trimmed : undefined;
}
