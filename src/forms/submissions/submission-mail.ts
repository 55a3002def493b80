import { Injectable, Logger } from '@nestjs/common';
import { isEmail } from 'class-validator';
import { AppException } from '../../common/errors/app.exception';
import { ErrorCode } from '../../common/errors/error-code';
import type { CompanionStatement, MessageWithEvents } from '../../outbox/acceptance.repository';
import { ComposedEmail, OutboxService } from '../../outbox/outbox.service';
import { TemplatesService } from '../../templates/templates.service';
import { MAX_FORM_EMAIL_BODY_BYTES } from '../emails/email-size';
import { renderAcknowledgment, renderNotification, SubmissionEmailContext } from '../emails/submission-emails';
import { FormFileLinks } from '../files/file-links';
import type { Form } from '../form.entity';
import type { SubmittedFields } from '../form-submission.entity';
import { FormLanguage, formLanguage } from '../i18n/language';
import { OwnerNotification, OwnerNotifications } from '../notifications/owner-notifications';
import { attachmentsWithin, MailAttachment } from '../uploads/submission-uploads';
import { AcknowledgmentClaim, AcknowledgmentGate } from './acknowledgment-gate';
import { FormSenders } from './form-sender';
import type { RequestOrigin } from './origin-policy';
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
   * The emails of a held submission of an instant form, once its recipient confirmed, with the statement that
   * marks it accepted.
   */
  async release(form: Form, held: HeldSubmission): Promise<SubmissionEmails & { statements: CompanionStatement[] }> {
    const submission: NewSubmission = { ...held, ...notNotified(), form, status: 'accepted', spamReason: null, heldAttachments: null };
    const emails = await this.emailsOf(form, submission, { all: {} }, held.heldAttachments ?? [], null);
    submission.messageIds = emails.messages.map(({ message }) => message.id);
    withNotification(submission, emails);
    return {
      ...emails,
      statements: [acceptedStatement(submission, 'held'), outboxStatement(submission), ...heldNotificationEvents(submission)],
    };
  }

  /**
   * The notification of a spam submission its owner released ("not spam"), with the statements that mark it accepted
   * (if it is still spam when they commit) and send its `form.submission` event. No acknowledgment: the visitor was
   * answered long ago. Files whose bytes were not kept (`kept` lists the positions that were) say so by their name.
   */
  async releaseFromSpam(
    form: Form,
    spam: HeldSubmission,
    kept: ReadonlySet<number>,
  ): Promise<SubmissionEmails & { statements: CompanionStatement[] }> {
    const submission: NewSubmission = { ...spam, ...notNotified(), form, status: 'accepted', spamReason: null, heldAttachments: null };
    const files = spam.files.map((file, i) => (kept.has(i) ? file : { ...file, filename: `${file.filename} (${FILE_NOT_KEPT})` }));
    const emails = await this.emailsOf(form, { ...submission, files }, { all: {} }, [], null, undefined, { acknowledge: false });
    submission.messageIds = emails.messages.map(({ message }) => message.id);
    withNotification(submission, emails);
    return {
      ...emails,
      statements: [acceptedStatement(submission, 'spam'), outboxStatement(submission), ...heldNotificationEvents(submission)],
    };
  }

  /**
   * The notification of a stored submission to some of its form's recipients (by default all), made later than the
   * submission: to a held recipient once its suppression is lifted, or after a release from spam. No acknowledgment;
   * the uploads are not attached (the stored submission lists them). Nothing is written: the caller accepts it.
   */
  async notifyOwner(form: Form, stored: HeldSubmission, recipients?: string[]): Promise<OwnerNotification> {
    const submission: NewSubmission = { ...stored, ...notNotified(), form, status: 'accepted', spamReason: null, heldAttachments: null };
    const emails = await this.emailsOf(form, submission, { all: {} }, [], null, undefined, { recipients, acknowledge: false });
    return { message: emails.messages[0] ?? null, held: emails.notification.held };
  }

  /**
   * The notification (and acknowledgment) of an accepted submission, recipients on the suppression list dropped.
   * The acknowledgment goes to one address at most once per form and hour (AcknowledgmentGate).
   */
  async emailsOf(
    form: Form,
    submission: NewSubmission,
    control: ControlFields,
    attachments: MailAttachment[],
    origin: RequestOrigin | null,
    language: FormLanguage = 'en',
    later?: { recipients?: string[]; acknowledge: false },
  ): Promise<SubmissionEmails> {
    const { settings } = form;
    const recipients = later?.recipients ?? settings.recipients ?? form.domain?.settings.contactRecipients;
    if (!recipients?.length) {
      throw new AppException(
        ErrorCode.Conflict,
        form.domain
          ? `The form has no recipients and ${form.domain.name} has no contactRecipients: set one with PUT /domains/${form.domain.name}`
          : 'The form has no recipients',
      );
    }
    const context: SubmissionEmailContext = {
      formName: settings.name ?? form.name,
      formId: form.id,
      domain: form.domain?.name ?? origin?.host ?? null,
      fields: submission.fields,
      ip: submission.ip ?? '',
      timestamp: submission.createdAt.toISOString(),
      submissionId: submission.id,
      files: submission.files.map(({ filename, size }, index) => ({
        filename,
        size,
        url: this.fileLinks.url({ submissionId: submission.id, index }, submission.createdAt),
      })),
    };
    const from = await this.senders.senderOf(form, context.formName);
    const submitter = validAddress(fieldText(submission.fields, 'email'));
    const replyTo = settings.replies === false ? undefined : (this.replyToOf(form, submission.fields, control) ?? submitter);

    const notificationTemplate = settings.template ? await this.templates.findForForm(form.accountId, settings.template) : null;
    const notification = renderNotification(context, {
      // The owner's email: in the language the form's page asks for (`_language`), not the visitor's browser's.
      language: formLanguage(control.language, undefined),
      format: control.format,
      literalSubject: control.subject,
      subject: settings.subject,
      template: notificationTemplate ?? undefined,
      onTemplateError: (err) =>
        this.logger.warn(`Template ${settings.template} of form ${form.id} failed, the default was used: ${err.message}`),
    });
    const notificationEmail: ComposedEmail = {
      ...from,
      to: recipients,
      cc: later ? [] : allowedCopies(control.cc, settings.ccAllowed),
      replyTo: replyTo ? [{ name: '', address: replyTo }] : [],
      ...notification,
      attachments: attachmentsWithin(
        attachments,
        MAX_FORM_EMAIL_BODY_BYTES - Buffer.byteLength(notification.text) - Buffer.byteLength(notification.html ?? ''),
      ),
    };
    const acknowledging = settings.acknowledgment?.enabled && submitter && !later;
    const ackReplyTo = settings.acknowledgment?.replyTo ? [settings.acknowledgment.replyTo] : [];
    const [notified, acknowledged] = await Promise.allSettled([
      this.ownerNotifications.compose(form.accountId, notificationEmail),
      // Reply-To only an address the owner set for acknowledgments: never the owner's private notification address.
      acknowledging ? this.acknowledgmentOf(form, context, { ...from, to: [submitter], replyTo: ackReplyTo }, language) : null,
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
    language: FormLanguage,
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
  private replyToOf(form: Form, fields: SubmittedFields, control: ControlFields): string | undefined {
    const fromControl = validAddress(control.replyTo);
    if (fromControl) return fromControl;
    const setting = form.settings.replyTo;
    if (!setting) return undefined;
    return setting.includes('@') ? setting : validAddress(fieldText(fields, setting));
  }
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
