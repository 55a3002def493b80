import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import type { AppException } from '../../common/errors/app.exception';
import { AppConfigService } from '../../config/app-config.service';
import type { CompanionStatement } from '../../outbox/acceptance.repository';
import { AttachmentStore } from '../../outbox/attachments/attachment-store';
import { OutboxService } from '../../outbox/outbox.service';
import { QuotaReservation, QuotaService } from '../../quotas/quota.service';
import type { Form } from '../form.entity';
import { FormSubmission } from '../form-submission.entity';
import { FormsService } from '../forms.service';
import { HeldArrivals } from '../submissions/held-arrivals';
import { SubmissionMail } from '../submissions/submission-mail';
import { SubmissionEmails, submissionMetering } from '../submissions/submission-record';
import { ReleaseBackoff } from './release-backoff';
import { fittingCount, quotaRefusal, roomLeft } from './release-quota';
import { ReleaseSlots } from './release-slots';

/** Held submissions released per commit, with their attachments. */
export const RELEASE_PAGE_SIZE = 50;
/** How often workers look for held submissions of confirmed forms (a release cut short by a crash, the quota, a race). */
export const HELD_SUBMISSION_SWEEP_MS = 60_000;
/**
 * Release pages running at once in a process, whoever asked (a confirmation, a background release, the sweep): each
 * holds a pooled connection for its transaction while its mail, quota and attachments take others.
 */
export const CONCURRENT_RELEASE_PAGES = 2;

/** A held submission ready to go out with what its release commits. */
type Release = SubmissionEmails & { statements: CompanionStatement[] };

export interface ReleaseOutcome {
  /** Submissions whose emails were committed. */
  released: number;
  /** The quota's 429 that stopped the release; what it had no room for stays held (the sweep tries again). */
  refusal: AppException | null;
}

/**
 * Sends the held submissions of confirmed instant forms (D-29), oldest first, a page at a time: each page is claimed
 * under row locks (SKIP LOCKED, so two releases never take one submission), and its emails commit with the statements
 * that mark its submissions accepted. Whoever flipped the form to confirmed starts the release; it goes on page after
 * page until none is held. A crash, a quota without room or a post that raced the confirmation leaves submissions
 * held: workers sweep for them at start and every minute, and a post stored held tells this at once (HeldArrivals).
 * At most CONCURRENT_RELEASE_PAGES pages run at once in a process; the others wait for a slot.
 */
@Injectable()
export class HeldSubmissionReleases implements OnModuleInit, OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(HeldSubmissionReleases.name);
  /** The releases running in this process, by form: one more round is asked for instead of a second release. */
  private readonly running = new Map<string, { again: boolean; done: Promise<void> }>();
  private readonly slots = new ReleaseSlots(CONCURRENT_RELEASE_PAGES);
  private readonly backoff = new ReleaseBackoff();
  private timer?: NodeJS.Timeout;
  private sweeping?: Promise<unknown>;
  private stopped = false;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly forms: FormsService,
    private readonly submissionMail: SubmissionMail,
    private readonly outbox: OutboxService,
    private readonly attachments: AttachmentStore,
    private readonly quotas: QuotaService,
    private readonly arrivals: HeldArrivals,
    private readonly config: AppConfigService,
  ) {}

  onModuleInit(): void {
    this.arrivals.register({ held: (formId) => this.heldArrived(formId) });
  }

  onApplicationBootstrap(): void {
    if (this.config.runsWorkers) this.schedule(0);
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await Promise.all([this.sweeping, ...[...this.running.values()].map((run) => run.done)]);
  }

  /** Releases the form's held submissions in the background, page after page (a confirmation's first page is its own). */
  releaseInBackground(formId: string): void {
    const run = this.running.get(formId);
    if (run) {
      run.again = true;
      return;
    }
    const entry = { again: true, done: Promise.resolve() };
    this.running.set(formId, entry);
    entry.done = (async () => {
      while (entry.again && !this.stopped) {
        entry.again = false;
        await this.releaseAll(formId).catch((err: Error) =>
          this.logger.error(`Releasing the held submissions of form ${formId} failed: ${err.message}`),
        );
      }
    })().finally(() => {
      this.running.delete(formId);
      // Asked for after the last round looked.
      if (entry.again && !this.stopped) this.releaseInBackground(formId);
    });
  }

  /** How many submissions of the form are held. */
  async heldCount(formId: string): Promise<number> {
    const [row]: { n: number }[] = await this.dataSource.query(
      `SELECT count(*)::int AS n FROM form_submissions WHERE form_id = $1 AND status = 'held'`,
      [formId],
    );
    return row.n;
  }

  /** Sends the held submissions of every confirmed form; how many. */
  async sweep(): Promise<number> {
    // By confirmed form (one probe of the held index each): held submissions of forms never confirmed may be many.
    const forms: { form_id: string }[] = await this.dataSource.query(
      `SELECT f.id AS form_id FROM forms f
        WHERE f.kind = 'instant' AND f.confirmed_at IS NOT NULL
          AND EXISTS (SELECT 1 FROM form_submissions s WHERE s.form_id = f.id AND s.status = 'held')`,
    );
    let released = 0;
    for (const { form_id: formId } of forms) {
      if (this.stopped) break;
      try {
        released += (await this.releaseAll(formId)).released;
      } catch (err) {
        this.logger.error(`Releasing the held submissions of form ${formId} failed: ${(err as Error).message}`);
      }
    }
    return released;
  }

  /**
   * Releases the form's held submissions page after page until none is left, the quota refuses or the process stops.
   * A submission whose emails cannot be made is logged and skipped for the rest of the run, and left out of later
   * releases for a while (ReleaseBackoff).
   */
  async releaseAll(formId: string): Promise<ReleaseOutcome> {
    const confirmed = await this.forms.findById(formId);
    if (!confirmed?.confirmedAt) return { released: 0, refusal: null };
    const failed = new Set<string>();
    let released = 0;
    for (;;) {
      const page = await this.releasePage(confirmed, failed);
      released += page.released;
      if (page.refusal || page.claimed === 0 || this.stopped) {
        if (released) this.logger.log(`Instant form ${formId}: ${released} held submissions released`);
        return { released, refusal: page.refusal };
      }
    }
  }

  /**
   * One page: claims the oldest held submissions not locked by another release, makes their emails and commits them
   * with the statements that mark them accepted, in one transaction. When the quota has no room for all, as many of
   * the oldest as fit go; the others stay held. Waits for one of the process's release slots.
   */
  releasePage(form: Form, failed: Set<string> = new Set()): Promise<ReleaseOutcome & { claimed: number }> {
    return this.slots.run(() => this.releasePageNow(form, failed));
  }

  private async releasePageNow(form: Form, failed: Set<string>): Promise<ReleaseOutcome & { claimed: number }> {
    const made: Release[] = [];
    const quota: { reservation: QuotaReservation | null } = { reservation: null };
    let committed = 0;
    try {
      const { claimed, count, messages, refusal } = await this.dataSource.transaction(async (manager) => {
        const rows = await this.claim(manager, form.id, new Set([...failed, ...this.backoff.waiting(Date.now())]));
        for (const row of rows) {
          try {
            made.push(await this.submissionMail.release(form, row, 'held'));
            this.backoff.succeeded(row.id);
          } catch (err) {
            failed.add(row.id);
            const first = this.backoff.failed(row.id, Date.now());
            const line = `Could not release held submission ${row.id} of form ${form.id} (tried again later): ${(err as Error).message}`;
            if (first) this.logger.error(line);
            else this.logger.warn(line);
          }
        }
        const reserved = await this.reserve(form, made);
        quota.reservation = reserved.reservation;
        const releases = made.slice(0, reserved.taken);
        const messages = releases.flatMap((r) => r.messages);
        if (releases.length) {
          await this.attachments.save(messages.flatMap((m) => m.attachments ?? []));
          await this.outbox.acceptWithin(manager, {
            messages,
            statements: releases.flatMap((r) => r.statements),
            metering: submissionMetering(form.accountId, 0, messages),
          });
        }
        return { claimed: rows.length, count: releases.length, messages, refusal: reserved.refusal };
      });
      committed = count;
      quota.reservation?.committed();
      for (const { message } of messages) this.outbox.queueDelivery(message);
      return { claimed, released: committed, refusal };
    } catch (err) {
      await quota.reservation?.release();
      throw err;
    } finally {
      // The acknowledgments of what stays held were not sent.
      await Promise.all(made.slice(committed).map((r) => r.acknowledgment?.giveBack() ?? Promise.resolve()));
    }
  }

  /** Counts the page's emails against the account's quotas: all of them, else the oldest that fit. */
  private async reserve(
    form: Form,
    releases: Release[],
  ): Promise<{ reservation: QuotaReservation | null; taken: number; refusal: AppException | null }> {
    if (!releases.length) return { reservation: null, taken: 0, refusal: null };
    const metering = (upTo: number) =>
      submissionMetering(
        form.accountId,
        0,
        releases.slice(0, upTo).flatMap((r) => r.messages),
      );
    try {
      return { reservation: await this.quotas.reserve(metering(releases.length)), taken: releases.length, refusal: null };
    } catch (err) {
      const refusal = quotaRefusal(err);
      if (!refusal) throw err;
      const fitting = fittingCount(releases, roomLeft(refusal));
      this.logger.warn(`Instant form ${form.id}: held submissions wait for the email quota (${refusal.message})`);
      if (fitting === 0) return { reservation: null, taken: 0, refusal };
      try {
        return { reservation: await this.quotas.reserve(metering(fitting)), taken: fitting, refusal };
      } catch (again) {
        const next = quotaRefusal(again);
        if (!next) throw again;
        return { reservation: null, taken: 0, refusal: next };
      }
    }
  }

  /** Locks the oldest held submissions of the form that no other release holds, but those given. */
  private claim(manager: EntityManager, formId: string, except: Set<string>): Promise<FormSubmission[]> {
    const query = manager
      .getRepository(FormSubmission)
      .createQueryBuilder('s')
      .where(`s.formId = :formId AND s.status = 'held'`, { formId })
      .orderBy('s.createdAt', 'ASC')
      .addOrderBy('s.id', 'ASC')
      .limit(RELEASE_PAGE_SIZE)
      .setLock('pessimistic_write')
      .setOnLocked('skip_locked');
    if (except.size) query.andWhere('s.id NOT IN (:...except)', { except: [...except] });
    return query.getMany();
  }

  /** A post stored held: if its form was confirmed meanwhile, it joins (or starts) the form's release. */
  private async heldArrived(formId: string): Promise<void> {
    const [row]: { confirmed: boolean }[] = await this.dataSource.query(
      'SELECT confirmed_at IS NOT NULL AS confirmed FROM forms WHERE id = $1',
      [formId],
    );
    if (row?.confirmed) this.releaseInBackground(formId);
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.sweeping = this.sweep()
        .catch((err: Error) => this.logger.warn(`Releasing held form submissions failed: ${err.message}`))
        .finally(() => this.schedule(HELD_SUBMISSION_SWEEP_MS));
    }, delayMs);
    this.timer.unref();
  }
}
