import { createHash, randomBytes } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';
import { newId } from '../../common/ids';
import { AppConfigService } from '../../config/app-config.service';
import type { CompanionStatement, MessageWithEvents } from '../../email/email.repository';
import { EmailService } from '../../email/email.service';
import { Form } from '../form.entity';
import type { FormSettings } from '../form-settings';
import { FormsService } from '../forms.service';
import { escapeHtml } from '../emails/html-text';
import { SubmissionsService } from '../submissions/submissions.service';
import type { CreateInstantFormDto } from './instant-forms.dto';

/** A confirmation that arrives this long after the first one releases what the first left held (a crash, a race). */
const LEFTOVER_AFTER_MS = 60_000;

export type ConfirmationResult = { state: 'unknown' } | { state: 'confirmed' | 'already'; form: Form; released: number };

/**
 * Instant forms (D-29): a form made from a name and an address, delivering nothing until that address
 * confirms by the link emailed to it. Submissions wait (`held`) and go out on confirmation.
 */
@Injectable()
export class InstantFormsService {
  private readonly logger = new Logger(InstantFormsService.name);

  constructor(
    private readonly forms: FormsService,
    private readonly email: EmailService,
    private readonly submissions: SubmissionsService,
    private readonly config: AppConfigService,
  ) {}

  /** Creates the forms and their confirmation emails in one commit. */
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
          confirmation_token_hash: sha256(token),
        },
      });
      const confirmation = await this.email.compose(accountId, this.confirmationEmail(input, token));
      if (confirmation) messages.push(confirmation);
    }
    // Mailroom's own confirmation emails are not metered.
    await this.email.accept({ messages, statements, metering: null });
    return Promise.all(drafts.map(({ id }) => this.forms.get(accountId, id)));
  }

  /** The link's GET: confirms the form and sends what waited for it. */
  async confirm(token: string): Promise<ConfirmationResult> {
    const form = await this.forms.findByConfirmationToken(sha256(token));
    if (!form) return { state: 'unknown' };
    const claimed = await this.forms.confirm(form.id);
    if (!claimed && form.confirmedAt && Date.now() - form.confirmedAt.getTime() < LEFTOVER_AFTER_MS) {
      return { state: 'already', form, released: 0 };
    }
    const released = await this.release(form);
    return { state: claimed ? 'confirmed' : 'already', form, released };
  }

  /** Sends the held submissions of a confirmed form, all in one commit. */
  private async release(form: Form): Promise<number> {
    const held = await this.forms.heldSubmissions(form.id, 500);
    if (held.length === 0) return 0;
    const messages: MessageWithEvents[] = [];
    const statements: CompanionStatement[] = [];
    for (const submission of held) {
      const released = await this.submissions.release(form, submission);
      messages.push(...released.messages);
      statements.push(...released.statements);
    }
    // Each held submission was counted when it arrived.
    await this.email.accept({ messages, statements, metering: null });
    this.logger.log(`Instant form ${form.id} confirmed: ${held.length} held submissions released`);
    return held.length;
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

function sha256(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}
