import { Injectable } from '@nestjs/common';
import { AppException } from '../../common/errors/app.exception';
import { ErrorCode } from '../../common/errors/error-code';
import { IdempotencyStore } from '../../common/idempotency/idempotency.store';
import { SuppressionService } from '../../suppression/suppression.service';
import type { MessageWithEvents } from '../../outbox/acceptance.repository';
import { OutboxService } from '../../outbox/outbox.service';
import type { SendOptions } from '../email.service';
import { PersonalMessages, recipientVariables } from '../personal-messages';
import { BatchResultDto, BatchSendDto, BatchSendResponseDto } from './batch-send.dto';

/** Rendered content one batch may add up to (subjects and bodies of all its messages), like the largest body a call may carry. */
const MAX_BATCH_CONTENT_BYTES = 40 * 1024 * 1024;

/** POST /email/batch: one message per recipient (D-15), all committed together. */
@Injectable()
export class BatchSendsService {
  constructor(
    private readonly personal: PersonalMessages,
    private readonly outbox: OutboxService,
    private readonly suppression: SuppressionService,
    private readonly idempotency: IdempotencyStore,
  ) {}

  /** Suppressed recipients get no message and are answered `suppressed`; the others are accepted in one commit (D-16). */
  async send(accountId: string, dto: BatchSendDto, options: SendOptions = {}): Promise<BatchSendResponseDto> {
    const prepared = await this.personal.prepare(accountId, dto, { allowedFromDomains: options.allowedFromDomains });
    const suppressed = await this.suppression.suppressedAmong(
      accountId,
      dto.recipients.map((r) => r.email),
    );
    const messages: MessageWithEvents[] = [];
    let bytes = 0;
    const data = dto.recipients.map(({ email, name, variables }): BatchResultDto => {
      if (suppressed.has(email.toLowerCase())) return { email, messageId: null, status: 'suppressed' };
      const made = this.personal.message(
        accountId,
        prepared,
        { email, name },
        recipientVariables(prepared.variables, { email, name }, variables),
      );
      const { subject, html, text } = made.message.content;
      bytes += Buffer.byteLength(subject) + Buffer.byteLength(html ?? '') + Buffer.byteLength(text ?? '');
      if (bytes > MAX_BATCH_CONTENT_BYTES) {
        throw new AppException(ErrorCode.PayloadTooLarge, `The rendered messages of this batch exceed ${MAX_BATCH_CONTENT_BYTES} bytes`, {
          limit: MAX_BATCH_CONTENT_BYTES,
        });
      }
      messages.push(made);
      return { email, messageId: made.message.id, status: made.message.status === 'scheduled' ? 'scheduled' : 'queued' };
    });
    const answer: BatchSendResponseDto = { success: true, data };
    const { idempotency } = options;
    await this.idempotency.guard(idempotency, () =>
      this.outbox.accept({ messages, idempotency: idempotency && { claim: idempotency, statusCode: 200, body: answer } }),
    );
    if (idempotency) idempotency.recorded = true;
    return answer;
  }
}
