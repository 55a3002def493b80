import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { sweepInBatches } from '../common/expired-rows';
import { AppConfigService } from '../config/app-config.service';
import { AttachmentStore } from '../outbox/attachments/attachment-store';
import { RedisService } from '../redis/redis.service';
import { dueSweeps, retentionPolicy } from './retention-policy';
import { RetentionRules, type SweptKind } from './retention-rules';

/** Batches one kind gets per run: a large backlog is worked off over several runs, and no kind waits for another's. */
const MAX_BATCHES_PER_RUN = 100;
/** Stored attachments one statement deletes at most: each may be 25 MB. */
const ATTACHMENT_BLOBS_PER_BATCH = 50;

/**
 * Removes or clears what the RETENTION_*_DAYS settings let go (retention-rules.ts), every
 * RETENTION_SWEEP_INTERVAL_MS on one instance at a time (Redis lock), in batches of RETENTION_BATCH_SIZE rows.
 * Two instances sweeping at once (a lock that expired mid-run) take different rows: every batch skips locked ones.
 * Each run ends by deleting the stored attachments no message refers to any more (their bodies were cleared, or
 * their acceptance failed after the bytes were written).
 */
@Injectable()
export class RetentionSweeper implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(RetentionSweeper.name);
  private timer?: NodeJS.Timeout;
  private running?: Promise<unknown>;
  private closing = false;

  constructor(
    private readonly rules: RetentionRules,
    private readonly attachments: AttachmentStore,
    private readonly redis: RedisService,
    private readonly config: AppConfigService,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => {
      if (this.running || this.closing) return;
      this.running = this.sweep()
        .catch((err: Error) => this.logger.warn(`Retention sweep failed: ${err.message}`))
        .finally(() => (this.running = undefined));
    }, this.config.env.RETENTION_SWEEP_INTERVAL_MS);
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    this.closing = true;
    await this.running;
  }

  /** One run over every kind not kept forever; answers how many rows of each it removed or cleared (null: another instance runs). */
  async sweep(now = new Date()): Promise<Partial<Record<SweptKind, number>> | null> {
    const { RETENTION_SWEEP_INTERVAL_MS: interval, RETENTION_BATCH_SIZE: size } = this.config.env;
    return this.redis.withLock(this.redis.key('retention', 'sweeper-lock'), interval, async () => {
      const swept: Partial<Record<SweptKind, number>> = {};
      for (const { kind, cutoff } of dueSweeps(retentionPolicy(this.config.env), now)) {
        for (const rule of this.rules.of(kind)) {
          if (this.closing) break;
          const counted = rule.counted;
          swept[counted] = await sweepInBatches({ kind: counted, size, maxBatches: MAX_BATCHES_PER_RUN }, (batch) =>
            rule.sweep(cutoff, batch),
          );
          if (swept[counted]) this.logger.log(`Retention: ${swept[counted]} ${counted} row(s) past ${cutoff.toISOString()} swept`);
        }
      }
      const orphans = { kind: 'attachment_blobs', size: ATTACHMENT_BLOBS_PER_BATCH, maxBatches: MAX_BATCHES_PER_RUN };
      if (!this.closing) swept.attachment_blobs = await sweepInBatches(orphans, (batch) => this.attachments.deleteUnreferenced(batch));
      return swept;
    });
  }
}
