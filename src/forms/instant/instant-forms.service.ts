import { randomBytes } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';
import { sha256Hex } from '../../common/crypto/sha256';
import { AppException } from '../../common/errors/app.exception';
import { ErrorCode } from '../../common/errors/error-code';
import { escapeHtml } from '../../common/escape-html';
import { newId } from '../../common/ids';
import { RateLimitService } from '../../rate-limits/rate-limit.service';
import { AppConfigService } from '../../config/app-config.service';
import { CompanionStatement, MessageWithEvents, recipientCount } from '../../outbox/acceptance.repository';
import { OutboxService } from '../../outbox/outbox.service';
import { Form } from '../form.entity';
import type { FormSettings } from '../form-settings';
import { FormsService } from '../forms.service';
import { SubmissionMail } from '../submissions/submission-mail';
import { SubmissionEmails, submissionMetering } from '../submissions/submission-record';
import type { CreateInstantFormDto } from './instant-forms.dto';

/** A confirmation that arrives this long after the first one releases what the first left held (a crash, a race). */
const LEFTOVER_AFTER_MS = 60_000;

export type ConfirmationResult =
  | { state: 'unknown' }
  | {
      state: 'confirmed' | 'already';
      form: Form;
      /** Held submissions sent now. */
      released: number;
      /** Held submissions still waiting: the account's email quota had no room for them. */
      waiting: number;
      /** When that quota has room again. */
      waitingUntil: Date | null;
    };

/** A held submission ready to go out with what its release commits. */
type Release = SubmissionEmails & { statements: CompanionStatement[] };

type ReleaseOutcome = Pick<Extract<ConfirmationResult, { form: Form }>, 'released' | 'waiting' | 'waitingUntil'>;

/**
 * Instant forms (D-29): a form made from a name and an address, delivering nothing until that address
 * confirms by the link emailed to it. Submissions wait (`held`) and go out on confirmation.
 */
@Injectable()
export class InstantFormsService {
  private readonly logger = new Logger(InstantFormsService.name);

  constructor(
    private readonly forms: FormsService,
    private readonly outbox: OutboxService,
    private readonly submissionMail: SubmissionMail,
    private readonly config: AppConfigService,
    private readonly limiter: RateLimitService,
  ) {}

  /**
   * Creates the forms and their confirmation emails in one commit. The emails are held to the account's hourly
   * confirmation cap and, like any email sent for the account, to its email quota (D-37): a request that would
   * pass either is refused whole.
   */
  async create(accountId: string, inputs: CreateInstantFormDto[]): Promise<Form[]> {
    const drafts = inputs.map((input) => ({ input, id: newId('frm'), token: randomBytes(32).toString('base64url') }));
    const messages: MessageWithEvents[] = [];
    const statements: CompanionStatement[] = [];
    for (const { input, id, token } of drafts) {
      const settings: FormSettings = { name: input.name, recipients: [input.email] };
      statements.push({
        table: 'forms',
        values: {
          id,
          account_id: accountId,
          kind: 'instant',
          name: input.name,
          settings: JSON.stringify(settings),
          confirmation_token_hash: sha256Hex(token),
        },
      });
      const confirmation = await this.outbox.compose(accountId, this.confirmationEmail(input, token));
      if (confirmation) messages.push(confirmation);
    }
    await this.limiter.enforceConfirmationEmails(accountId, recipientCount(messages));
    await this.outbox.accept({ messages, statements, metering: submissionMetering(accountId, 0, messages) });
    return Promise.all(drafts.map(({ id }) => this.forms.get(accountId, id)));
  }

  /** The link's GET: confirms the form and sends what waited for it. */
  async confirm(token: string): Promise<ConfirmationResult> {
    const form = await this.forms.findByConfirmationToken(sha256Hex(token));
    if (!form) return { state: 'unknown' };
    const claimed = await this.forms.confirm(form.id);
    if (!claimed && form.confirmedAt && Date.now() - form.confirmedAt.getTime() < LEFTOVER_AFTER_MS) {
      return { state: 'already', form, released: 0, waiting: 0, waitingUntil: null };
    }
    const outcome = await this.release(form);
    return { state: claimed ? 'confirmed' : 'already', form, ...outcome };
  }

  /**
   * Sends the held submissions of a confirmed form, oldest first, in one commit. Their emails count against the
   * account's email quota now (each submission was counted when it arrived). When the quota has no room for all
   * of them, as many of the oldest as fit go; the rest stay held until the link is followed again.
   */
  private async release(form: Form): Promise<ReleaseOutcome> {
    const held = await this.forms.heldSubmissions(form.id, 500);
    if (held.length === 0) return { released: 0, waiting: 0, waitingUntil: null };
    const releases: Release[] = [];
    let released = 0;
    try {
      for (const submission of held) releases.push(await this.submissionMail.release(form, submission, 'held'));
      let refusal = await this.accept(form, releases);
      if (!refusal) released = releases.length;
      const fitting = refusal ? fittingCount(releases, roomLeft(refusal)) : 0;
      if (fitting > 0) {
        const again = await this.accept(form, releases.slice(0, fitting));
        if (again) refusal = again;
        else released = fitting;
      }
      const waiting = held.length - released;
      if (released) this.logger.log(`Instant form ${form.id} confirmed: ${released} held submissions released`);
      if (!waiting || !refusal) return { released, waiting: 0, waitingUntil: null };
      this.logger.warn(`Instant form ${form.id}: ${waiting} held submissions wait for the email quota (${refusal.message})`);
      return { released, waiting, waitingUntil: resetOf(refusal) };
    } finally {
      // The acknowledgments of what stays held were not sent.
      await Promise.all(releases.slice(released).map((r) => r.acknowledgment?.giveBack() ?? Promise.resolve()));
    }
  }

  /** Commits the releases; a quota's 429 is returned, not thrown: the confirmation stands, the mail waits. */
  private async accept(form: Form, releases: Release[]): Promise<AppException | null> {
    const messages = releases.flatMap((r) => r.messages);
    try {
      await this.outbox.accept({
        messages,
        statements: releases.flatMap((r) => r.statements),
        metering: submissionMetering(form.accountId, 0, messages),
      });
      return null;
    } catch (err) {
      if (err instanceof AppException && (err.code === ErrorCode.QuotaExceeded || err.code === ErrorCode.AccountQuotaExceeded)) return err;
      throw err;
    }
  }

  private confirmationEmail(input: CreateInstantFormDto, token: string) {
    const link = `${this.config.publicUrl}/instant/forms/confirm/${token}`;
    const name = input.name.replace(/[\r\n]+/g, ' ');
    const from = this.config.formsFrom;
    return {
      from: { name: from.name || 'Mailroom', address: from.address },
      systemSender: true,
      to: [input.email],
      subject: `Confirm your form “${name}”`,
      text:
        `Someone created the form “${name}” to send its submissions to ${input.email}.\n\n` +
        `To receive them, confirm with this link:\n${link}\n\nIf this was not you, ignore this email: nothing will be sent to you.`,
      html:
        `<p>Someone created the form <strong>${escapeHtml(name)}</strong> to send its submissions to ${escapeHtml(input.email)}.</p>` +
        `<p><a href="${escapeHtml(link)}" style="display:inline-block;padding:10px 18px;background:#1f6feb;color:#fff;border-radius:6px;text-decoration:none">Confirm and receive submissions</a></p>` +
        `<p>If this was not you, ignore this email: nothing will be sent to you.</p>`,
    };
  }
}

/** How many of the releases, oldest first, fit in `room` emails. */
export function fittingCount(releases: Pick<Release, 'messages'>[], room: number): number {
  let used = 0;
  for (let i = 0; i < releases.length; i++) {
    used += recipientCount(releases[i].messages);
    if (used > room) return i;
  }
  return releases.length;
}

/** What the refusing quota still had room for (its 429's details). */
function roomLeft(refusal: AppException): number {
  const remaining = refusal.details?.remaining;
  return typeof remaining === 'number' ? remaining : 0;
}

/** When the refusing quota has room again. */
function resetOf(refusal: AppException): Date | null {
  const reset = refusal.details?.reset_time;
  return typeof reset === 'string' ? new Date(reset) : null;
}
