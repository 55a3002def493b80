import { Injectable, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { isEmail } from 'class-validator';
import type { AuthContext } from '../../auth/auth-context';
import { AppException } from '../../common/errors/app.exception';
import { ErrorCode } from '../../common/errors/error-code';
import { foreignKeyViolation } from '../../common/errors/unique-violation';
import { IdempotencyClaim, IdempotencyStore } from '../../common/idempotency/idempotency.store';
import { newId } from '../../common/ids';
import { DEFAULT_FORM_RATE_LIMIT } from '../../rate-limits/rate-limit.policy';
import { RateLimitService } from '../../rate-limits/rate-limit.service';
import { AppConfigService } from '../../config/app-config.service';
import { CompanionStatement, recipientCount } from '../../outbox/acceptance.repository';
import type { MessageWithEvents } from '../../outbox/acceptance.repository';
import { ComposedEmail, OutboxService } from '../../outbox/outbox.service';
import { withFormQuotaMessage } from '../../quotas/form-quota-message';
import type { Metering } from '../../quotas/usage-statement';
import { TemplatesService } from '../../templates/templates.service';
import { renderAcknowledgment, renderNotification, SubmissionEmailContext } from '../emails/submission-emails';
import { Form } from '../form.entity';
import type { SubmissionStatus, SubmittedFields, SubmittedFile } from '../form-submission.entity';
import { CaptchaVerifier, CAPTCHA_FIELDS } from '../spam/captcha-verifier';
import { ALTCHA_FIELD, ChallengeService } from '../spam/challenge.service';
import { contentFilterReason, DEFAULT_HONEYPOT, honeypotTripped } from '../spam/spam-filter';
import { checkUploads, MailAttachment, mailAttachments, ReceivedFile } from '../uploads/submission-uploads';
import { AcknowledgmentClaim, AcknowledgmentGate } from './acknowledgment-gate';
import { FormSenders } from './form-sender';
import { FormTargets, SubmissionRoute } from './form-targets';
import { OriginPolicy, requestOrigin, RequestOrigin } from './origin-policy';
import { ControlFields, fieldText, parseSubmittedFields } from './submitted-fields';

/** The answer to a post (D-25): JSON clients get it as is, browsers a 303 to `redirect`. */
export interface SubmissionAnswer {
  success: true;
  message: string;
  submissionId: string;
}

export interface SubmissionOutcome {
  answer: SubmissionAnswer;
  /** Where a browser goes next: `_redirect` (if its origin may post), the form's redirect, or our thank-you page. */
  redirect: string;
  /** The origin to put in Access-Control-Allow-Origin, when it may post. */
  corsOrigin: string | null;
}

export interface SubmissionInput {
  route: SubmissionRoute;
  request: Request;
  response: Response;
  auth?: AuthContext;
  files?: ReceivedFile[];
  idempotency?: IdempotencyClaim;
}

const THANKS = 'Thank you! Your submission has been received.';

/** The emails of an accepted submission, and the acknowledgment's claim to give back if they are not accepted. */
export interface SubmissionEmails {
  messages: MessageWithEvents[];
  acknowledgment: AcknowledgmentClaim | null;
}

const NO_EMAILS: SubmissionEmails = { messages: [], acknowledgment: null };

/** What a stored submission is made of, before it is written. */
interface NewSubmission {
  id: string;
  form: Form;
  status: SubmissionStatus;
  spamReason: string | null;
  fields: SubmittedFields;
  files: SubmittedFile[];
  heldAttachments: MailAttachment[] | null;
  messageIds: string[];
  ip: string | null;
  userAgent: string | null;
  origin: string | null;
  createdAt: Date;
}

/**
 * The one submission path of every form endpoint: find the form, check who may post (D-26), limit, read the
 * fields and uploads, keep spam out (D-27), validate, then commit the submission with its emails and its
 * `form.submission` event in one statement before answering (D-16, D-17).
 */
@Injectable()
export class SubmissionsService {
  private readonly logger = new Logger(SubmissionsService.name);

  constructor(
    private readonly targets: FormTargets,
    private readonly origins: OriginPolicy,
    private readonly limiter: RateLimitService,
    private readonly challenges: ChallengeService,
    private readonly captchas: CaptchaVerifier,
    private readonly outbox: OutboxService,
    private readonly templates: TemplatesService,
    private readonly idempotency: IdempotencyStore,
    private readonly config: AppConfigService,
    private readonly senders: FormSenders,
    private readonly acknowledgments: AcknowledgmentGate,
  ) {}

  async submit(input: SubmissionInput): Promise<SubmissionOutcome> {
    const { request, response, auth } = input;
    const origin = requestOrigin(request.get('origin'), request.get('referer'));
    const form = await this.targets.resolve(input.route, { auth, origin, request, response });
    const originAllowed = await this.origins.allows(form, origin);
    if (!auth && !originAllowed) {
      throw new AppException(
        ErrorCode.OriginNotAllowed,
        origin
          ? `${origin.origin} may not post to this form: use a verified domain of the form's account or one of its allowedOrigins`
          : 'A form post without a credential must come from a browser page (Origin or Referer header)',
      );
    }
    // Server-side callers with an admin or usage key are held to their key's limits, browsers to the form's.
    if (!auth || auth.keyType === 'public') {
      const perHour = form.settings.rateLimit ?? form.settings.spam_protection?.rate_limit ?? DEFAULT_FORM_RATE_LIMIT;
      await this.limiter.enforceFormLimit(request, response, form.id, perHour);
    }

    const { fields, control } = parseSubmittedFields(request.body);
    const uploads = await checkUploads(input.files);
    await this.checkChallenge(form, control, request.ip ?? '');
    const spamReason = this.spamReason(form, fields, control);
    if (!spamReason) this.validate(form, fields, control);
    // Read from their files now: they are stored with the message (or the held submission) and removed after the response.
    const attachments = spamReason ? [] : await mailAttachments(uploads);

    const submission: NewSubmission = {
      id: newId('sub'),
      form,
      status: spamReason ? 'spam' : form.confirmedAt ? 'accepted' : 'held',
      spamReason,
      fields,
      files: uploads.map(({ field, filename, contentType, size }) => ({ field, filename, contentType, size })),
      heldAttachments: !spamReason && !form.confirmedAt ? attachments : null,
      messageIds: [],
      ip: request.ip ?? null,
      userAgent: request.get('user-agent')?.slice(0, 500) ?? null,
      origin: origin?.origin ?? null,
      createdAt: new Date(),
    };
    const emails = submission.status === 'accepted' ? await this.emailsOf(form, submission, control, attachments, origin) : NO_EMAILS;
    const { messages } = emails;
    submission.messageIds = messages.map(({ message }) => message.id);

    const answer: SubmissionAnswer = { success: true, message: THANKS, submissionId: submission.id };
    const { idempotency } = input;
    try {
      await this.idempotency.guard(idempotency, () =>
        this.outbox.accept({
          messages,
          statements: submissionStatements(submission),
          metering: submissionMetering(form.accountId, submission.status === 'spam' ? 0 : 1, messages),
          idempotency: idempotency && { claim: idempotency, statusCode: 200, body: answer },
        }),
      );
    } catch (err) {
      // Nothing was accepted (a quota's 429, a replay): the submitter's acknowledgment was not sent.
      await emails.acknowledgment?.giveBack();
      // The form was deleted while this post used a copy found a moment before.
      if (foreignKeyViolation(err)) throw AppException.notFound('Form', form.id);
      throw withFormQuotaMessage(err, form.settings.rate_limiting);
    }
    if (idempotency) idempotency.recorded = true;
    return { answer, redirect: this.redirectOf(form, control, origin, originAllowed), corsOrigin: originAllowed ? origin!.origin : null };
  }

  /**
   * The emails of a held submission of an instant form, once its recipient confirmed, with the statement that
   * marks it accepted.
   */
  async release(form: Form, held: HeldSubmission): Promise<SubmissionEmails & { statements: CompanionStatement[] }> {
    const submission: NewSubmission = { ...held, form, status: 'accepted', spamReason: null, heldAttachments: null, messageIds: [] };
    const emails = await this.emailsOf(form, submission, { all: {} }, held.heldAttachments ?? [], null);
    submission.messageIds = emails.messages.map(({ message }) => message.id);
    const accepted: CompanionStatement = (p) =>
      `UPDATE form_submissions SET status = 'accepted', held_attachments = NULL, message_ids = ${p(JSON.stringify(submission.messageIds))}::jsonb ` +
      `WHERE id = ${p(held.id)} AND status = 'held'`;
    return { ...emails, statements: [accepted, outboxStatement(submission)] };
  }

  /**
   * The notification (and acknowledgment) of an accepted submission, recipients on the suppression list dropped.
   * The acknowledgment goes to one address at most once per form and hour (AcknowledgmentGate).
   */
  private async emailsOf(
    form: Form,
    submission: NewSubmission,
    control: ControlFields,
    attachments: MailAttachment[],
    origin: RequestOrigin | null,
  ): Promise<SubmissionEmails> {
    const { settings } = form;
    const recipients = settings.recipients ?? form.domain?.settings.contactRecipients;
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
      domain: form.domain?.name ?? origin?.host ?? null,
      fields: submission.fields,
      ip: submission.ip ?? '',
      timestamp: submission.createdAt.toISOString(),
      submissionId: submission.id,
      files: submission.files.map(({ filename, size }) => ({ filename, size })),
    };
    const from = await this.senders.senderOf(form, context.formName);
    const submitter = validAddress(fieldText(submission.fields, 'email'));
    const replyTo = settings.replies === false ? undefined : (this.replyToOf(form, submission.fields, control) ?? submitter);

    const notificationTemplate = settings.template ? await this.templates.findForForm(form.accountId, settings.template) : null;
    const notification = renderNotification(context, {
      literalSubject: control.subject,
      subject: settings.subject,
      template: notificationTemplate ?? undefined,
      onTemplateError: (err) =>
        this.logger.warn(`Template ${settings.template} of form ${form.id} failed, the default was used: ${err.message}`),
    });
    const notificationEmail: ComposedEmail = {
      ...from,
      to: recipients,
      replyTo: replyTo ? [{ name: '', address: replyTo }] : [],
      ...notification,
      attachments,
    };
    const acknowledging = settings.acknowledgment?.enabled && submitter;
    const [notified, acknowledged] = await Promise.allSettled([
      this.outbox.compose(form.accountId, notificationEmail),
      acknowledging ? this.acknowledgmentOf(form, context, { ...from, to: [submitter], replyTo: notificationEmail.to.slice(0, 1) }) : null,
    ]);
    if (notified.status === 'rejected') {
      if (acknowledged.status === 'fulfilled') await acknowledged.value?.claim.giveBack();
      throw notified.reason;
    }
    if (acknowledged.status === 'rejected') throw acknowledged.reason;
    const messages = [notified.value, acknowledged.value?.message ?? null].filter((m): m is MessageWithEvents => m !== null);
    return { messages, acknowledgment: acknowledged.value?.claim ?? null };
  }

  /**
   * The acknowledgment to the submitter with its claim, or null when the form acknowledged that address within the
   * hour, or the address is on the suppression list.
   */
  private async acknowledgmentOf(
    form: Form,
    context: SubmissionEmailContext,
    envelope: Pick<ComposedEmail, 'from' | 'systemSender' | 'to'> & { replyTo: string[] },
  ): Promise<{ message: MessageWithEvents; claim: AcknowledgmentClaim } | null> {
    const ack = form.settings.acknowledgment!;
    const claim = await this.acknowledgments.claim(form.id, envelope.to[0]);
    if (!claim) return null;
    try {
      const template = ack.template ? await this.templates.findForForm(form.accountId, ack.template) : null;
      const acknowledgment = renderAcknowledgment(context, {
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

  private async checkChallenge(form: Form, control: ControlFields, ip: string): Promise<void> {
    const spam = form.settings.spam_protection;
    const challenge = spam?.challenge ?? (spam?.level === 'high' ? 'altcha' : undefined);
    if (challenge === 'altcha') await this.challenges.verify(form, control.all[ALTCHA_FIELD]);
    else if (challenge) await this.captchas.verify(challenge, spam!.captcha_secret!, control.all[CAPTCHA_FIELDS[challenge]], ip);
  }

  /** D-27: why a submission is spam (stored as such, answered like a success), or null. */
  private spamReason(form: Form, fields: SubmittedFields, control: ControlFields): string | null {
    const spam = form.settings.spam_protection;
    if (spam?.level === 'off') return null;
    const honeypot = spam?.honeypot ?? DEFAULT_HONEYPOT;
    const posted = { ...fields, ...control.all };
    if (honeypotTripped(posted, honeypot)) return `honeypot field ${honeypot} was filled in`;
    if (spam?.content_filter) return contentFilterReason(fields, spam.level === 'low' || spam.level === 'high' ? spam.level : 'medium');
    return null;
  }

  /** Required fields present, `email` (and `_replyto`) well-formed: every problem in one 400. */
  private validate(form: Form, fields: SubmittedFields, control: ControlFields): void {
    const errors: { field: string; message: string }[] = [];
    for (const name of form.settings.requiredFields ?? []) {
      if (fieldText(fields, name) === undefined) errors.push({ field: name, message: `${name} is required` });
    }
    const email = fieldText(fields, 'email');
    if (email !== undefined && !validAddress(email)) errors.push({ field: 'email', message: 'must be a valid email address' });
    if (control.replyTo !== undefined && !validAddress(control.replyTo))
      errors.push({ field: '_replyto', message: 'must be a valid email address' });
    if (control.subject !== undefined && control.subject.length > 998)
      errors.push({ field: '_subject', message: 'at most 998 characters' });
    if (Object.keys(fields).length === 0) errors.push({ field: 'body', message: 'the submission has no fields' });
    if (errors.length) throw AppException.validation(errors);
  }

  /** `_redirect` only to an origin that may post to the form (no open redirect), else the form's, else ours. */
  private redirectOf(form: Form, control: ControlFields, origin: RequestOrigin | null, originAllowed: boolean): string {
    if (control.redirect) {
      const target = requestOrigin(control.redirect, undefined);
      if (target && originAllowed && origin && (target.origin === origin.origin || target.host === origin.host)) return control.redirect;
    }
    return form.settings.redirect ?? `${this.config.publicUrl}/forms/thank-you`;
  }
}

/**
 * What an acceptance of form mail counts (D-37): its submissions, and one email per recipient of its messages
 * (the notification's recipients and the acknowledgment's one).
 */
export function submissionMetering(accountId: string, submissions: number, messages: MessageWithEvents[]): Metering {
  return { accountId, emails: recipientCount(messages), submissions };
}

/** A held submission as stored, enough to make its emails later. */
export type HeldSubmission = Pick<
  NewSubmission,
  'id' | 'fields' | 'files' | 'ip' | 'userAgent' | 'origin' | 'createdAt' | 'heldAttachments'
>;

/** The submission row, and for an accepted one its `form.submission` event. */
function submissionStatements(s: NewSubmission): CompanionStatement[] {
  const insert: CompanionStatement = {
    table: 'form_submissions',
    values: {
      id: s.id,
      account_id: s.form.accountId,
      form_id: s.form.id,
      status: s.status,
      spam_reason: s.spamReason,
      fields: JSON.stringify(s.fields),
      files: JSON.stringify(s.files),
      held_attachments: s.heldAttachments ? JSON.stringify(s.heldAttachments) : null,
      message_ids: JSON.stringify(s.messageIds),
      ip: s.ip,
      user_agent: s.userAgent,
      origin: s.origin,
      created_at: s.createdAt,
    },
  };
  return s.status === 'accepted' ? [insert, outboxStatement(s)] : [insert];
}

function outboxStatement(s: NewSubmission): CompanionStatement {
  const payload = {
    type: 'form.submission',
    formId: s.form.id,
    formName: s.form.name,
    submissionId: s.id,
    fields: s.fields,
    files: s.files,
    messageIds: s.messageIds,
    timestamp: s.createdAt.toISOString(),
  };
  return { table: 'event_outbox', values: { account_id: s.form.accountId, type: 'form.submission', payload: JSON.stringify(payload) } };
}

function validAddress(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed && !/[\r\n]/.test(trimmed) && isEmail(trimmed) ? trimmed : undefined;
}
