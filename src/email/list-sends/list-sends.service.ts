import { createHash } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { AppException } from '../../common/errors/app.exception';
import { checkViolation, uniqueViolation } from '../../common/errors/unique-violation';
import { IdempotencyStore } from '../../common/idempotency/idempotency.store';
import { newId } from '../../common/ids';
import { AppConfigService } from '../../config/app-config.service';
import { ListsService, Recipient } from '../../lists/lists.service';
import { QuotaService } from '../../quotas/quota.service';
import { creditStatement, EmailCredit } from '../../quotas/usage-statement';
import { SuppressionService } from '../../suppression/suppression.service';
import { SendEmailDto } from '../dto/send-email.dto';
import type { AddParam, CompanionStatement } from '../../outbox/acceptance.repository';
import { OutboxService } from '../../outbox/outbox.service';
import type { SendOptions } from '../email.service';
import { PersonalMessages, recipientVariables } from '../personal-messages';
import { ListSendAcceptedDto } from './dto/list-send.dto';
import { FINISHED_LIST_SEND_STATUSES, ListSend, METERED_COVERS_QUEUED } from './list-send.entity';
import { PageProgress, pageProgress, quotaRefusalOf, SubscriberOutcome } from './list-send-pages';
import { FanOutInterrupted, failureDescription, gaveUpReason, ListSendFailed } from './list-send-attempts';
import { ListSendQueue } from './list-send.queue';

/** How a send ends: its list has no more subscribers, a quota stopped it, or its fan-out kept failing. */
type Ending =
  { status: 'done' } | { status: 'stopped'; reason: string; refused: number } | { status: 'failed'; error: string; refused: number };

/** An unfinished send as the sweeper sees it. */
export interface StalledListSend {
  id: string;
  attempts: number;
  lastError: string | null;
}

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
    private readonly outbox: OutboxService,
    private readonly suppression: SuppressionService,
    private readonly idempotency: IdempotencyStore,
    private readonly queue: ListSendQueue,
    private readonly quotas: QuotaService,
    private readonly config: AppConfigService,
  ) {}

  /**
   * Accepts a send with `list`: checks it like a send, stores it with its idempotent answer (D-16, D-17) and
   * queues its fan-out. `queued` counts the subscribers it reaches now: they are metered now, so that the send
   * is refused whole or accepted whole, and the fan-out then meters what it makes beyond them and gives back
   * what it does not make.
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
    // A list deleted meanwhile gives a send that makes nothing and gives its count back.
    await this.idempotency.guard(idempotency, () =>
      this.outbox.accept({
        messages: [],
        statements: [
          {
            table: 'list_sends',
            values: { id, account_id: accountId, list_id: list.id, request: JSON.stringify(request), metered: queued },
          },
        ],
        metering: { accountId, emails: queued, submissions: 0 },
        idempotency: idempotency && { claim: idempotency, statusCode: 200, body: answer },
      }),
    );
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
   * Makes the messages of a list send, a page of subscribers at a time, and ends it when the list has no more
   * (`done`) or a quota stops it (`stopped`). Each page's messages commit in one statement with the row's new
   * cursor and counts, so a run that stops (a dead worker, `stopping`) resumes after the last committed page.
   * Every progress statement applies only to the row as its run read it: a stalled job run beside itself fails
   * on what the other run committed (the messages' primary key, or METERED_COVERS_QUEUED) and goes on from there,
   * so nobody is written twice and nothing is metered or given back twice.
   */
  async fanOut(listSendId: string, stopping: () => boolean): Promise<void> {
    const batchSize = this.config.env.LIST_SEND_BATCH_SIZE;
    let send = await this.sends.findOneBy({ id: listSendId });
    while (send && !FINISHED_LIST_SEND_STATUSES.includes(send.status)) {
      if (stopping()) {
        throw new FanOutInterrupted(`the worker is shutting down; list send ${listSendId} resumes after ${send.cursor ?? 'its start'}`);
      }
      const page = await this.lists.subscribedPage(send.listId, send.cursor ?? '', batchSize);
      try {
        send = await this.step(send, page, page.length < batchSize);
      } catch (err) {
        if (uniqueViolation(err) === null && checkViolation(err) !== METERED_COVERS_QUEUED) throw err;
        const current = await this.sends.findOneBy({ id: listSendId });
        // Not another run's work: a real error.
        if (current && sameProgress(current, send)) throw err;
        this.logger.warn(`List send ${listSendId}: another run moved it on from ${send.cursor ?? 'its start'}; going on from there`);
        send = current;
      }
    }
  }

  /**
   * One run of a send's job (the list-sends worker), counted in the row before it fans out, so that the count goes
   * on over every job the send has (the sweeper's included). A run that fails records why (`lastError`) and rejects,
   * for Bull to retry it; the one that uses up LIST_SEND_MAX_ATTEMPTS fails the send and rejects with ListSendFailed.
   * A run the worker's shutdown interrupted gives its count back.
   */
  async run(listSendId: string, stopping: () => boolean): Promise<void> {
    const max = this.config.env.LIST_SEND_MAX_ATTEMPTS;
    const send = await this.sends.findOneBy({ id: listSendId });
    if (!send || FINISHED_LIST_SEND_STATUSES.includes(send.status)) return;
    if (send.attempts >= max) {
      // Its runs used up the attempts without failing the send (their worker died, or could not write the end).
      const reason = gaveUpReason(send.attempts, send.lastError);
      // Not failed here: another run ended it meanwhile, and this one has nothing to do.
      if (!(await this.fail(listSendId, reason))) return;
      throw new ListSendFailed(`List send ${listSendId} failed: ${reason}`);
    }
    const attempt = await this.countAttempt(listSendId);
    try {
      await this.fanOut(listSendId, stopping);
    } catch (err) {
      if (err instanceof FanOutInterrupted) {
        await this.sends
          .query('UPDATE list_sends SET attempts = attempts - 1 WHERE id = $1 AND attempts > 0', [listSendId])
          .catch((e: Error) => this.logger.warn(`List send ${listSendId}: could not give back an interrupted run: ${e.message}`));
        throw err;
      }
      const message = (err as Error).message;
      if (attempt < max) {
        this.logger.warn(`List send ${listSendId}: run ${attempt} of ${max} failed: ${message}`);
        await this.sends
          .query('UPDATE list_sends SET last_error = $2, updated_at = now() WHERE id = $1', [listSendId, failureDescription(err)])
          .catch((e: Error) => this.logger.warn(`List send ${listSendId}: could not record its failed run: ${e.message}`));
        throw err;
      }
      this.logger.error(`List send ${listSendId}: run ${attempt} of ${max} failed: ${message}; the send is failed`);
      await this.fail(listSendId, `gave up after ${attempt} attempts: ${failureDescription(err)}`);
      throw new ListSendFailed(`List send ${listSendId} failed after ${attempt} attempts: ${message}`, { cause: err });
    }
  }

  /**
   * Ends an unfinished send as `failed` with `error`: what was counted against the quotas and not made is given
   * back, and the subscribers past its cursor are `refused`; the messages it made stay and are sent. False when it
   * had ended already (another run ended it first), and is left as it is.
   */
  async fail(listSendId: string, error: string): Promise<boolean> {
    for (let tries = 0; ; tries++) {
      const send = await this.sends.findOneBy({ id: listSendId });
      if (!send || FINISHED_LIST_SEND_STATUSES.includes(send.status)) return false;
      const refused = await this.lists.countSendable(send.accountId, send.listId, send.cursor ?? '');
      try {
        await this.end(send, { status: 'failed', error, refused });
        return true;
      } catch (err) {
        // Another run moved it on since it was read (METERED_COVERS_QUEUED): again, from where it is now.
        if (checkViolation(err) !== METERED_COVERS_QUEUED || tries >= 2) throw err;
      }
    }
  }

  /** Unfinished list sends untouched since `olderThan`: their job may be lost. */
  async stalled(olderThan: Date, limit: number): Promise<StalledListSend[]> {
    // The literals let PostgreSQL use the partial index of unfinished sends.
    const rows: { id: string; attempts: number; last_error: string | null }[] = await this.sends.query(
      `SELECT id, attempts, last_error FROM list_sends WHERE status NOT IN ('done', 'stopped', 'failed') AND updated_at < $1 ` +
        'ORDER BY updated_at LIMIT $2',
      [olderThan, limit],
    );
    return rows.map((row) => ({ id: row.id, attempts: row.attempts, lastError: row.last_error }));
  }

  /** Counts a run of the send; returns its number. */
  private async countAttempt(listSendId: string): Promise<number> {
    // Selected from the CTE: a bare UPDATE … RETURNING comes back from TypeORM as [rows, count].
    const rows: { attempts: number }[] = await this.sends.query(
      'WITH counted AS (UPDATE list_sends SET attempts = attempts + 1, updated_at = now() WHERE id = $1 RETURNING attempts) ' +
        'SELECT attempts FROM counted',
      [listSendId],
    );
    return rows[0]?.attempts ?? 1;
  }

  /**
   * One page: its messages commit, metering what they make beyond what is metered for the send and not made yet
   * (the excess). A quota that refuses the excess stops the send after the messages that still fit.
   */
  private async step(send: ListSend, page: Recipient[], last: boolean): Promise<ListSend> {
    const outcomes = await this.pageOutcomes(send, page);
    const budget = send.metered - send.queued;
    const progress = pageProgress(outcomes);
    const excess = Math.max(0, progress.messages.length - budget);
    let next = send;
    try {
      if (progress.cursor !== null) next = await this.commitPage(send, progress, excess);
    } catch (err) {
      const refusal = quotaRefusalOf(err);
      if (!refusal) throw err;
      return this.stop(send, outcomes, refusal);
    }
    return last ? this.end(next, { status: 'done' }) : next;
  }

  /**
   * The excess of a page was refused: makes what is metered already and as many more as the quota has left (the
   * refusal says how many; a quota that refuses those too is asked again with its own), then ends the send.
   */
  private async stop(send: ListSend, outcomes: SubscriberOutcome[], refusal: { quota: string; remaining: number }): Promise<ListSend> {
    const budget = send.metered - send.queued;
    let allowed = refusal.remaining;
    let next = send;
    for (;;) {
      const progress = pageProgress(outcomes, budget + allowed);
      try {
        if (progress.cursor !== null) next = await this.commitPage(send, progress, Math.max(0, progress.messages.length - budget));
        break;
      } catch (err) {
        const again = quotaRefusalOf(err);
        // Each refusal leaves less than was asked for: this ends, at worst with nothing beyond the budget (no excess).
        if (!again || allowed === 0) throw err;
        allowed = Math.min(again.remaining, allowed - 1);
      }
    }
    const refused = await this.lists.countSendable(next.accountId, next.listId, next.cursor ?? '');
    this.logger.log(`List send ${send.id} stopped: ${refusal.quota} ran out; ${refused} subscriber(s) not written to`);
    return this.end(next, { status: 'stopped', reason: refusal.quota, refused });
  }

  /** A page's messages and the row's progress in one statement (OutboxService.accept), with the excess metered. */
  private async commitPage(send: ListSend, progress: PageProgress, excess: number): Promise<ListSend> {
    const { messages, suppressed, failed, cursor } = progress;
    const statement: CompanionStatement = (p) =>
      `UPDATE list_sends SET cursor = ${p(cursor)}, queued = queued + ${p(messages.length)}, suppressed = suppressed + ${p(suppressed)}, ` +
      `failed = failed + ${p(failed)}, metered = ${unlessMovedOn(send, p, `metered + ${p(excess)}`)}, status = 'sending', updated_at = now() ` +
      `WHERE id = ${p(send.id)}`;
    await this.outbox.accept({
      messages,
      statements: [statement],
      metering: excess > 0 ? { accountId: send.accountId, emails: excess, submissions: 0 } : null,
    });
    return Object.assign(new ListSend(), send, {
      cursor,
      status: 'sending',
      queued: send.queued + messages.length,
      metered: send.metered + excess,
      suppressed: send.suppressed + suppressed,
      failed: send.failed + failed,
    });
  }

  /**
   * Ends the send: what was metered and not made is given back, in the hour it was counted in (acceptance), in
   * the statement that ends it. Never in a page's statement: the group commit may put another acceptance's usage
   * of the same hour beside it.
   */
  private async end(send: ListSend, end: Ending): Promise<ListSend> {
    const unmade = send.metered - send.queued;
    const credit: EmailCredit = { accountId: send.accountId, emails: unmade, countedAt: send.createdAt };
    const reason = end.status === 'stopped' ? end.reason : null;
    const refused = end.status === 'done' ? 0 : end.refused;
    const error = end.status === 'failed' ? end.error : null;
    await this.quotas.credit(credit, async () => {
      const params: unknown[] = [];
      const p: AddParam = (value) => `$${params.push(value)}`;
      const closing =
        `UPDATE list_sends SET status = ${p(end.status)}, stopped_reason = ${p(reason)}, refused = ${p(refused)}, last_error = COALESCE(${p(error)}, last_error), ` +
        `metered = ${unlessMovedOn(send, p, 'queued')}, completed_at = now(), updated_at = now() WHERE id = ${p(send.id)}`;
      await this.sends.query(unmade > 0 ? `WITH closed AS (${closing}) ${creditStatement(credit, p)}` : closing, params);
    });
    return Object.assign(new ListSend(), send, {
      status: end.status,
      metered: send.queued,
      stoppedReason: reason,
      refused,
      lastError: error ?? send.lastError,
    });
  }

  /** What becomes of each subscriber of the page, in order: a message, or skipped (suppressed, or its rendering failed). */
  private async pageOutcomes(send: ListSend, page: Recipient[]): Promise<SubscriberOutcome[]> {
    if (page.length === 0) return [];
    const suppressed = await this.suppression.suppressedAmong(
      send.accountId,
      page.map((s) => s.email),
    );
    return page.map(({ email, name }): SubscriberOutcome => {
      if (suppressed.has(email)) return { email, skipped: 'suppressed' };
      const variables = recipientVariables(send.request.variables, { email, name });
      variables.subscriber = { email, name: name ?? '' };
      try {
        return {
          email,
          message: this.personal.message(send.accountId, send.request, { email, name }, variables, messageIdOf(send.id, email)),
        };
      } catch (err) {
        if (!(err instanceof AppException)) throw err;
        this.logger.warn(`List send ${send.id}: no message for a subscriber: ${err.message}`);
        return { email, skipped: 'failed' };
      }
    });
  }
}

/**
 * `value` while the row is as this run read it; otherwise -1, which breaks METERED_COVERS_QUEUED and so fails
 * the whole statement (messages, metering, credit): an UPDATE that matched no row would fail nothing.
 */
function unlessMovedOn(send: ListSend, p: AddParam, value: string): string {
  return (
    `CASE WHEN cursor IS NOT DISTINCT FROM ${p(send.cursor)} AND status IN ('queued', 'sending') ` +
    `AND queued = ${p(send.queued)} AND metered = ${p(send.metered)} THEN ${value} ELSE -1 END`
  );
}

function sameProgress(a: ListSend, b: ListSend): boolean {
  return a.cursor === b.cursor && a.status === b.status && a.queued === b.queued && a.metered === b.metered;
}

/** The message id of a subscriber's message in a list send: the same every time that page is made. */
function messageIdOf(listSendId: string, email: string): string {
  const digest = createHash('sha256').update(listSendId).update('\0').update(email).digest();
  let id = 'msg_';
  for (let i = 0; i < 22; i++) id += ID_ALPHABET[digest[i] % 62];
  return id;
}
