import { createHash } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { AppException } from '../../common/errors/app.exception';
import { foreignKeyViolation, uniqueViolation } from '../../common/errors/unique-violation';
import { IdempotencyStore } from '../../common/idempotency/idempotency.store';
import { newId } from '../../common/ids';
import { AppConfigService } from '../../config/app-config.service';
import { ListsService, Recipient } from '../../lists/lists.service';
import { SuppressionService } from '../../suppression/suppression.service';
import { SendEmailDto } from '../dto/send-email.dto';
import type { CompanionStatement, MessageWithEvents } from '../email.repository';
import { EmailService, SendOptions } from '../email.service';
import { PersonalMessages } from '../personal-messages';
import { ListSendAcceptedDto } from './dto/list-send.dto';
import { ListSend } from './list-send.entity';
import { ListSendQueue } from './list-send.queue';

const ID_ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/**
 * Sends to a mailing list (D-15): accepted as a `list_sends` row, then fanned out by the `list-sends` queue,
 * LIST_SEND_BATCH_SIZE subscribers at a time in address order, never the whole list in memory.
 */
@Injectable()
export class ListSendsService {
  private readonly logger = new Logger(ListSendsService.name);

  constructor(
    @InjectRepository(ListSend) private readonly sends: Repository<ListSend>,
    private readonly lists: ListsService,
    private readonly personal: PersonalMessages,
    private readonly email: EmailService,
    private readonly suppression: SuppressionService,
    private readonly idempotency: IdempotencyStore,
    private readonly queue: ListSendQueue,
    private readonly config: AppConfigService,
  ) {}

  /**
   * Accepts a send with `list`: checks it like a send, stores it with its idempotent answer (D-16, D-17) and
   * queues its fan-out. `queued` counts the subscribers it reaches now.
   */
  async start(accountId: string, dto: SendEmailDto, options: SendOptions = {}): Promise<ListSendAcceptedDto> {
    const refused = (['to', 'cc', 'bcc', 'attachments'] as const).filter((field) => dto[field] !== undefined);
    if (refused.length) {
      throw AppException.validation(
        refused.map((field) => ({ field, message: `cannot be used with list: a list send writes one message to each subscriber` })),
      );
    }
    const list = await this.lists.get(accountId, dto.list!);
    const request = await this.personal.prepare(
      accountId,
      { ...dto, variables: { ...(dto.data ?? {}), ...(dto.variables ?? {}) } },
      { allowedFromDomains: options.allowedFromDomains, listId: list.id },
    );
    const queued = await this.lists.countSendable(accountId, list.id);
    const id = newId('lsnd');
    const answer: ListSendAcceptedDto = { success: true, listSendId: id, listId: list.id, status: 'queued', queued };
    const { idempotency } = options;
    try {
      await this.idempotency.guard(idempotency, () =>
        this.email.accept({
          messages: [],
          statements: [{ table: 'list_sends', values: { id, account_id: accountId, list_id: list.id, request: JSON.stringify(request) } }],
          // Counted once, now, for every subscriber it will reach: a list send is refused whole or accepted whole.
          metering: { accountId, emails: queued, submissions: 0 },
          idempotency: idempotency && { claim: idempotency, statusCode: 200, body: answer },
        }),
      );
    } catch (err) {
      // The list was deleted meanwhile.
      if (foreignKeyViolation(err)) throw AppException.notFound('List', list.id);
      throw err;
    }
    if (idempotency) idempotency.recorded = true;
    void this.queue.add(id);
    return answer;
  }

  /** A list send of the account's list; 404 for unknown and foreign ids alike. */
  async get(accountId: string, listId: string, listSendId: string): Promise<ListSend> {
    const send = await this.sends.findOneBy({ id: listSendId, listId, accountId });
    if (!send) throw AppException.notFound('List send', listSendId);
    return send;
  }

  /**
   * Makes the messages of a list send, a page of subscribers at a time. Each page's messages commit in one
   * statement with the row's new cursor and counts, so a run that stops (a dead worker, `stopping`) resumes
   * after the last committed page. Message ids derive from the send and the address: a page made twice (a
   * stalled job run beside itself) fails on the messages' primary key instead of writing anyone twice.
   */
  async fanOut(listSendId: string, stopping: () => boolean): Promise<void> {
    const batchSize = this.config.env.LIST_SEND_BATCH_SIZE;
    let send = await this.sends.findOneBy({ id: listSendId });
    while (send && send.status !== 'done') {
      if (stopping()) throw new Error(`the worker is shutting down; list send ${listSendId} resumes after ${send.cursor ?? 'its start'}`);
      const page = await this.lists.subscribedPage(send.listId, send.cursor ?? '', batchSize);
      const { messages, suppressed, failed } = await this.pageMessages(send, page);
      const done = page.length < batchSize;
      const cursor = page.length ? page[page.length - 1].email : send.cursor;
      const progress: CompanionStatement = (p) =>
        `UPDATE list_sends SET cursor = ${p(cursor)}, queued = queued + ${p(messages.length)}, suppressed = suppressed + ${p(suppressed)}, ` +
        `failed = failed + ${p(failed)}, status = ${p(done ? 'done' : 'sending')}, completed_at = ${done ? 'now()' : 'NULL'}, updated_at = now() ` +
        `WHERE id = ${p(send!.id)}`;
      try {
        await this.email.accept({ messages, statements: [progress], metering: null });
      } catch (err) {
        if (uniqueViolation(err) === null) throw err;
        const current = await this.sends.findOneBy({ id: listSendId });
        // Not another run's work: a real error.
        if (current?.cursor === send.cursor) throw err;
        this.logger.warn(
          `List send ${listSendId}: the page after ${send.cursor ?? 'its start'} was made by another run; going on from there`,
        );
        send = current;
        continue;
      }
      send = Object.assign(send, { cursor, status: done ? 'done' : 'sending' });
    }
  }

  /** Unfinished list sends untouched since `olderThan`: their job may be lost. */
  async stalled(olderThan: Date, limit: number): Promise<string[]> {
    // The literal 'done' lets PostgreSQL use the partial index of unfinished sends.
    const rows: { id: string }[] = await this.sends.query(
      `SELECT id FROM list_sends WHERE status <> 'done' AND updated_at < $1 ORDER BY updated_at LIMIT $2`,
      [olderThan, limit],
    );
    return rows.map((row) => row.id);
  }

  private async pageMessages(
    send: ListSend,
    page: Recipient[],
  ): Promise<{ messages: MessageWithEvents[]; suppressed: number; failed: number }> {
    if (page.length === 0) return { messages: [], suppressed: 0, failed: 0 };
    const suppressed = await this.suppression.suppressedAmong(
      send.accountId,
      page.map((s) => s.email),
    );
    const messages: MessageWithEvents[] = [];
    let failed = 0;
    for (const { email, name } of page) {
      if (suppressed.has(email)) continue;
      const variables = { ...send.request.variables, email, name: name ?? '', subscriber: { email, name: name ?? '' } };
      try {
        messages.push(this.personal.message(send.accountId, send.request, { email, name }, variables, messageIdOf(send.id, email)));
      } catch (err) {
        if (!(err instanceof AppException)) throw err;
        failed++;
        this.logger.warn(`List send ${send.id}: no message for a subscriber: ${err.message}`);
      }
    }
    return { messages, suppressed: suppressed.size, failed };
  }
}

/** The message id of a subscriber's message in a list send: the same every time that page is made. */
function messageIdOf(listSendId: string, email: string): string {
  const digest = createHash('sha256').update(listSendId).update('\0').update(email).digest();
  let id = 'msg_';
  for (let i = 0; i < 22; i++) id += ID_ALPHABET[digest[i] % 62];
  return id;
}
