import { randomBytes } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';
import { sha256Hex } from '../../common/crypto/sha256';
import { escapeHtml } from '../../common/escape-html';
import { newId } from '../../common/ids';
import { RateLimitService } from '../../rate-limits/rate-limit.service';
import { AppConfigService } from '../../config/app-config.service';
import { CompanionStatement, MessageWithEvents, recipientCount } from '../../outbox/acceptance.repository';
import { OutboxService } from '../../outbox/outbox.service';
import { Form } from '../form.entity';
import type { FormSettings } from '../form-settings';
import { FormsService } from '../forms.service';
import { submissionMetering } from '../submissions/submission-record';
import type { ConfirmationOutcome, ConfirmationView } from './confirmation-view';
import { HeldSubmissionReleases } from './held-submission-releases';
import type { CreateInstantFormDto } from './instant-forms.dto';
import { resetOf } from './release-quota';

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
    private readonly releases: HeldSubmissionReleases,
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

  /** The link's page (GET): what it would confirm. Changes nothing: mail scanners follow links. */
  async view(token: string): Promise<ConfirmationView> {
    const form = await this.forms.findByConfirmationToken(sha256Hex(token));
    if (!form) return { state: 'unknown' };
    if (form.confirmedAt) return { state: 'already', form };
    return { state: 'pending', form, held: await this.releases.heldCount(form.id) };
  }

  /**
   * The link's button (POST): confirms the form. The update that flips it to confirmed decides who releases: a
   * concurrent or later confirmation is told it was confirmed already and releases nothing. The first page of held
   * submissions goes out before the answer (the page can say what waits for the quota), the rest in the background:
   * the answer tells what was sent, not what will be.
   */
  async confirm(token: string): Promise<ConfirmationOutcome> {
    const form = await this.forms.findByConfirmationToken(sha256Hex(token));
    if (!form) return { state: 'unknown' };
    if (!(await this.forms.confirm(form.id))) return { state: 'already', form };
    const held = await this.releases.heldCount(form.id);
    const confirmed: Extract<ConfirmationOutcome, { state: 'confirmed' }> = {
      state: 'confirmed',
      form,
      held,
      sentNow: 0,
      waitingForQuota: false,
      quotaResetAt: null,
    };
    // A post that read the form unconfirmed may still commit held: HeldArrivals brings it to a release.
    if (!held) return confirmed;
    try {
      const first = await this.releases.releasePage(form);
      confirmed.sentNow = first.released;
      // The sweep sends the rest once the quota has room.
      if (first.refusal) return { ...confirmed, waitingForQuota: true, quotaResetAt: resetOf(first.refusal) };
    } catch (err) {
      // The confirmation stands; the background release (or the workers' sweep) tries again.
      this.logger.error(`Releasing the held submissions of instant form ${form.id} failed: ${(err as Error).message}`);
    }
    this.releases.releaseInBackground(form.id);
    return confirmed;
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
        `To receive them, open this link and press the button to confirm:\n${link}\n\nIf this was not you, ignore this email: nothing will be sent to you.`,
      html:
        `<p>Someone created the form <strong>${escapeHtml(name)}</strong> to send its submissions to ${escapeHtml(input.email)}.</p>` +
        `<p><a href="${escapeHtml(link)}" style="display:inline-block;padding:10px 18px;background:#1f6feb;color:#fff;border-radius:6px;text-decoration:none">Confirm and receive submissions</a></p>` +
        `<p>If this was not you, ignore this email: nothing will be sent to you.</p>`,
    };
  }
}
