import { Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import type { AuthContext } from '../../auth/auth-context';
import { AppException } from '../../common/errors/app.exception';
import { ErrorCode } from '../../common/errors/error-code';
import { foreignKeyViolation } from '../../common/errors/unique-violation';
import { IdempotencyClaim, IdempotencyStore } from '../../common/idempotency/idempotency.store';
import { newId } from '../../common/ids';
import { OutboxService } from '../../outbox/outbox.service';
import { withFormQuotaMessage } from '../../quotas/form-quota-message';
import { DEFAULT_FORM_RATE_LIMIT } from '../../rate-limits/rate-limit.policy';
import { RateLimitService } from '../../rate-limits/rate-limit.service';
import { submissionFileRows } from '../files/submission-file-rows';
import type { Form } from '../form.entity';
import type { SubmittedFields } from '../form-submission.entity';
import { FormLanguage, formLanguage } from '../i18n/language';
import { CaptchaVerifier, CAPTCHA_FIELDS } from '../spam/captcha-verifier';
import { ALTCHA_FIELD, ChallengeService } from '../spam/challenge.service';
import { senderAllowed } from '../spam/sender-allowlist';
import { contentFilterReason, DEFAULT_HONEYPOT, trippedHoneypot } from '../spam/spam-filter';
import { asMailAttachments, checkUploads, ReceivedFile, readUploads } from '../uploads/submission-uploads';
import { DuplicatePosts } from './duplicate-posts';
import { FormTargets, SubmissionRoute } from './form-targets';
import { HeldArrivals } from './held-arrivals';
import { backLink } from './navigation';
import { OriginPolicy, requestOrigin, RequestOrigin } from './origin-policy';
import { rememberForm } from './submission-errors.filter';
import { notificationOptionsOf, SubmissionMail, validAddress } from './submission-mail';
import {
  NewSubmission,
  NO_EMAILS,
  notNotified,
  postFingerprint,
  submissionMetering,
  submissionStatements,
  withNotification,
} from './submission-record';
import { ControlFields, fieldText, parseSubmittedFields } from './submitted-fields';
import { ThankYouLinks } from './thank-you-links';

/** The answer to a post (D-25): JSON clients get it as is, browsers a 303 to `redirect`. */
export interface SubmissionAnswer {
  success: true;
  message: string;
  submissionId: string;
}

export interface SubmissionOutcome {
  answer: SubmissionAnswer;
  /** Where a browser goes next: `_redirect` (if its origin may post), the form's redirect, or our thank-you page (ThankYouLinks). */
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

/**
 * The one submission path of every form endpoint: find the form, check who may post (D-26), limit, read the
 * fields and uploads, keep spam out (D-27), validate, then commit the submission with its emails and its
 * `form.submission` event in one statement before answering (D-16, D-17).
 */
@Injectable()
export class SubmissionsService {
  constructor(
    private readonly targets: FormTargets,
    private readonly origins: OriginPolicy,
    private readonly limiter: RateLimitService,
    private readonly challenges: ChallengeService,
    private readonly captchas: CaptchaVerifier,
    private readonly outbox: OutboxService,
    private readonly mail: SubmissionMail,
    private readonly idempotency: IdempotencyStore,
    private readonly thankYouLinks: ThankYouLinks,
    private readonly duplicates: DuplicatePosts,
    private readonly heldArrivals: HeldArrivals,
  ) {}

  async submit(input: SubmissionInput): Promise<SubmissionOutcome> {
    const { request, response, auth } = input;
    const origin = requestOrigin(request.get('origin'), request.get('referer'));
    const form = await this.targets.resolve(input.route, { auth, origin, request, response });
    rememberForm(request, form);
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

    const { fields, control } = parseSubmittedFields(request.body, input.files);
    const uploads = await checkUploads(input.files, form.settings.allowedFileTypes);
    await this.checkChallenge(form, control, request.ip ?? '');
    const spamReason = this.spamReason(form, fields, control);
    if (!spamReason) this.validate(form, fields, control);
    // Read from their files now (removed after the response): kept in the attachment store with the submission, whatever
    // its status, and attached to its notification while that stays under the email cap (else only linked).
    const stored = await readUploads(uploads);
    const attachments = spamReason ? [] : asMailAttachments(uploads, stored);

    const submission: NewSubmission = {
      id: newId('sub'),
      form,
      status: spamReason ? 'spam' : form.confirmedAt ? 'accepted' : 'held',
      spamReason,
      fields,
      files: uploads.map(({ field, filename, contentType, size }) => ({ field, filename, contentType, size })),
      heldAttachments: !spamReason && !form.confirmedAt ? attachments : null,
      notificationOptions: notificationOptionsOf(control, form.settings.ccAllowed, request.get('accept-language')),
      ...notNotified(),
      ip: request.ip ?? null,
      userAgent: request.get('user-agent')?.slice(0, 500) ?? null,
      origin: origin?.origin ?? null,
      createdAt: new Date(),
    };
    const language = formLanguage(control.language, request.get('accept-language'));
    const emails = submission.status === 'accepted' ? await this.mail.emailsOf(form, submission, attachments) : NO_EMAILS;
    const { messages } = emails;
    submission.messageIds = messages.map(({ message }) => message.id);
    withNotification(submission, emails);

    const redirect = this.redirectOf(form, control, origin, originAllowed, language, request);
    const corsOrigin = originAllowed ? origin!.origin : null;
    // A double click or a retry: answered with the first post's id, nothing stored or sent again. Idempotency-Key posts are the caller's.
    const duplicate = input.idempotency ? null : await this.duplicates.check(postFingerprint(submission, stored), submission.id);
    if (duplicate?.firstId) {
      await emails.acknowledgment?.giveBack();
      return { answer: { success: true, message: THANKS, submissionId: duplicate.firstId }, redirect, corsOrigin };
    }

    const answer: SubmissionAnswer = { success: true, message: THANKS, submissionId: submission.id };
    const { idempotency } = input;
    try {
      await this.idempotency.guard(idempotency, () =>
        this.outbox.accept({
          messages,
          statements: [...submissionStatements(submission), ...submissionFileRows(submission.id, stored)],
          attachments: stored,
          metering: submissionMetering(form.accountId, submission.status === 'spam' ? 0 : 1, messages),
          idempotency: idempotency && { claim: idempotency, statusCode: 200, body: answer },
        }),
      );
    } catch (err) {
      // Nothing was accepted (a quota's 429, a replay): the submitter's acknowledgment was not sent, the post may come again.
      await Promise.all([emails.acknowledgment?.giveBack(), duplicate?.giveBack()]);
      // The form was deleted while this post used a copy found a moment before.
      if (foreignKeyViolation(err)) throw AppException.notFound('Form', form.id);
      throw withFormQuotaMessage(err, form.settings.rate_limiting);
    }
    if (idempotency) idempotency.recorded = true;
    await duplicate?.confirm();
    // Its form may have been confirmed since it was read: the release then picks this one up too.
    if (submission.status === 'held') this.heldArrivals.stored(form.id);
    return { answer, redirect, corsOrigin };
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
    const honeypot = trippedHoneypot({ ...fields, ...control.all }, spam?.honeypot ?? DEFAULT_HONEYPOT);
    if (honeypot) return `honeypot field ${honeypot} was filled in`;
    if (spam?.content_filter && !senderAllowed(spam.allowlist, fieldText(fields, 'email'))) {
      return contentFilterReason(fields, spam.level === 'low' || spam.level === 'high' ? spam.level : 'medium');
    }
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

  /**
   * `_redirect` only to an origin that may post to the form (no open redirect), else the form's, else our thank-you
   * page in the visitor's language, linking back to the page that posted when its origin may post.
   */
  private redirectOf(
    form: Form,
    control: ControlFields,
    origin: RequestOrigin | null,
    originAllowed: boolean,
    language: FormLanguage,
    request: Request,
  ): string {
    if (control.redirect) {
      const target = requestOrigin(control.redirect, undefined);
      if (target && originAllowed && origin && (target.origin === origin.origin || target.host === origin.host)) return control.redirect;
    }
    return form.settings.redirect ?? this.thankYouLinks.url(language, backLink(request, originAllowed ? origin!.origin : null));
  }
}
