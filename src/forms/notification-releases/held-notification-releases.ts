import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { AppConfigService } from '../../config/app-config.service';
import type { CompanionStatement } from '../../outbox/acceptance.repository';
import type { Message } from '../../outbox/message.entity';
import { OutboxService } from '../../outbox/outbox.service';
import { SuppressionLifts } from '../../suppression/suppression-lifts';
import type { Form } from '../form.entity';
import type { HeldNotificationRecipient, NotificationOptions, SubmittedFields, SubmittedFile } from '../form-submission.entity';
import { FormsService } from '../forms.service';
import { SubmissionMail } from '../submissions/submission-mail';

/** Submissions released per transaction. */
const BATCH = 50;
/** How often workers look for held notifications whose suppression was lifted without their being told (a dead process). */
export const HELD_NOTIFICATION_SWEEP_MS = 60_000;

interface HeldRow {
  id: string;
  account_id: string;
  form_id: string;
  fields: SubmittedFields;
  files: SubmittedFile[];
  ip: string | null;
  user_agent: string | null;
  origin: string | null;
  created_at: Date;
  notification_held: HeldNotificationRecipient[];
  notification_options: NotificationOptions | null;
  /** The held addresses no longer suppressed. */
  lifted: string[];
}

/**
 * Sends the notifications held for suppressed recipients once their suppression is lifted: at once when the
 * suppression API takes an address off (SuppressionLifts), and by a sweep on workers at start and every minute,
 * so a lift whose process died before the release is not lost. Each batch of submissions is locked (SKIP LOCKED:
 * concurrent releases never send one twice), and its notifications are committed with the submissions' new state; a
 * submission that cannot be released (its notification fails to render, a row the database refuses) is logged and
 * left for the next run without holding back the others.
 */
@Injectable()
export class HeldNotificationReleases implements OnModuleInit, OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(HeldNotificationReleases.name);
  private timer?: NodeJS.Timeout;
  private running?: Promise<unknown>;
  private stopped = false;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly forms: FormsService,
    private readonly submissionMail: SubmissionMail,
    private readonly outbox: OutboxService,
    private readonly lifts: SuppressionLifts,
    private readonly config: AppConfigService,
  ) {}

  onModuleInit(): void {
    this.lifts.register({ lifted: async (accountId, email) => void (await this.release({ accountId, email })) });
  }

  onApplicationBootstrap(): void {
    if (this.config.runsWorkers) this.schedule(0);
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.release()
        .catch((err: Error) => this.logger.warn(`Releasing held form notifications failed: ${err.message}`))
        .finally(() => this.schedule(HELD_NOTIFICATION_SWEEP_MS));
    }, delayMs);
    this.timer.unref();
  }

  /** Sends what is held for addresses no longer suppressed: of one account's address, or all of them; how many submissions. */
  async release(scope?: { accountId: string; email: string }): Promise<number> {
    let released = 0;
    // Submissions whose release failed in this run: left for the next one, so they never stop the others.
    const failed = new Set<string>();
    for (;;) {
      const batch = await this.releaseBatch(failed, scope);
      released += batch.released;
      if (batch.claimed < BATCH || this.stopped) break;
    }
    if (released) this.logger.log(`Released the held notifications of ${released} form submission(s)`);
    return released;
  }

  /** One batch, each submission under its own savepoint: one that cannot be released is logged and skipped. */
  private async releaseBatch(
    failed: Set<string>,
    scope?: { accountId: string; email: string },
  ): Promise<{ claimed: number; released: number }> {
    const queued: Message[] = [];
    const result = await this.dataSource.transaction(async (manager) => {
      const rows = await this.claim(manager, [...failed], scope);
      const forms = new Map<string, Form | null>();
      let released = 0;
      for (const row of rows) {
        await manager.query('SAVEPOINT held_notification');
        try {
          if (!forms.has(row.form_id)) forms.set(row.form_id, await this.forms.findById(row.form_id));
          const message = await this.releaseOne(manager, forms.get(row.form_id)!, row);
          await manager.query('RELEASE SAVEPOINT held_notification');
          if (message) queued.push(message);
          released++;
        } catch (err) {
          await manager.query('ROLLBACK TO SAVEPOINT held_notification');
          failed.add(row.id);
          this.logger.error(`Could not release the held notification of form submission ${row.id}: ${(err as Error).message}`);
        }
      }
      return { claimed: rows.length, released };
    });
    for (const message of queued) this.outbox.queueDelivery(message);
    return result;
  }

  /** Locks the next held submissions with an address no longer suppressed, oldest first, but those given. */
  private claim(manager: EntityManager, except: string[], scope?: { accountId: string; email: string }): Promise<HeldRow[]> {
    const params: unknown[] = [BATCH, except];
    let filter = '';
    if (scope) {
      params.push(scope.accountId, JSON.stringify([{ email: scope.email.toLowerCase() }]));
      filter = 'AND s.account_id = $3 AND s.notification_held @> $4::jsonb';
    }
    const lifted = (alias: string) =>
      `FROM jsonb_array_elements(s.notification_held) ${alias} WHERE NOT EXISTS ` +
      `(SELECT 1 FROM suppression_entries e WHERE e.account_id = s.account_id AND e.email = ${alias} ->> 'email')`;
    return manager.query(
      `SELECT s.id, s.account_id, s.form_id, s.fields, s.files, s.ip, s.user_agent, s.origin, s.created_at, s.notification_held,
         s.notification_options, (SELECT COALESCE(jsonb_agg(h ->> 'email'), '[]') ${lifted('h')}) AS lifted
       FROM form_submissions s
       WHERE s.notification_held IS NOT NULL AND s.id <> ALL ($2::varchar[]) ${filter} AND EXISTS (SELECT 1 ${lifted('k')})
       ORDER BY s.created_at LIMIT $1
       FOR UPDATE OF s SKIP LOCKED`,
      params,
    );
  }

  /** The notification to the lifted addresses, committed with the submission's new state; the message to queue. */
  private async releaseOne(manager: EntityManager, form: Form | null, row: HeldRow): Promise<Message | null> {
    const stillHeld = row.notification_held.filter((held) => !row.lifted.includes(held.email));
    const notification = form
      ? await this.submissionMail.notifyOwner(
          form,
          {
            id: row.id,
            fields: row.fields,
            files: row.files,
            ip: row.ip,
            userAgent: row.user_agent,
            origin: row.origin,
            createdAt: new Date(row.created_at),
            heldAttachments: null,
            notificationOptions: row.notification_options,
          },
          row.lifted,
        )
      : { message: null, held: [] };
    // Suppressed again since the claim: held again, with its new entry.
    const held = [...stillHeld, ...notification.held];
    const messageId = notification.message?.message.id;
    const update: CompanionStatement = (p) =>
      `UPDATE form_submissions SET notification_held = ${p(held.length ? JSON.stringify(held) : null)}::jsonb` +
      (messageId
        ? `, message_ids = message_ids || ${p(JSON.stringify([messageId]))}::jsonb, ` +
          `notification_message_ids = COALESCE(notification_message_ids, '[]'::jsonb) || ${p(JSON.stringify([messageId]))}::jsonb`
        : '') +
      ` WHERE id = ${p(row.id)}`;
    if (!notification.message) {
      const params: unknown[] = [];
      await manager.query(
        update((value) => `$${params.push(value)}`),
        params,
      );
      return null;
    }
    const { message } = notification.message;
    await this.outbox.acceptWithin(manager, {
      messages: [notification.message],
      statements: [update],
      // Metered as sent now; not held to the quota: the owner's own notification of a submission accepted before.
      metering: { accountId: row.account_id, emails: message.recipients.length, submissions: 0 },
    });
    return message;
  }
}
