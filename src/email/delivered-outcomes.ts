import { Injectable, Logger } from '@nestjs/common';
import { allFulfilled, MicroBatch } from '../common/micro-batch';
import { RedisService } from '../redis/redis.service';
import type { RecipientAnswer } from './smtp-outcome';

/** What the provider answered to an attempt that reached at least one recipient. */
export interface DeliveredOutcome {
  /** The message's pending recipients when it was sent: the outcome is that attempt's only. */
  pending: string[];
  /** Dropped at send time: on the suppression list since acceptance. */
  suppressed: string[];
  accepted: string[];
  rejected: RecipientAnswer[];
  response: string;
}

/** Long enough for any outage of PostgreSQL the retry schedule (24 h) rides out. */
const TTL_S = 24 * 3600;
const MAX_BATCH = 500;

/**
 * Outcomes sent but perhaps not yet written to their message row, in Redis, keyed by message id. The worker
 * saves the provider's answer before it writes the row; an attempt that finds one for the same pending
 * recipients writes the row from it instead of sending again. So a delivered message is not sent twice when
 * PostgreSQL refused the write; only a worker dying between the answer and this save can still cause a
 * duplicate. Concurrent jobs share one round trip for each kind of call.
 */
@Injectable()
export class DeliveredOutcomes {
  private readonly logger = new Logger(DeliveredOutcomes.name);
  private readonly finds = new MicroBatch<string, DeliveredOutcome | null>((ids) => this.load(ids), MAX_BATCH, 2);
  private readonly saves = new MicroBatch<{ messageId: string; outcome: DeliveredOutcome }, void>(
    (items) => this.store(items),
    MAX_BATCH,
    2,
  );
  private readonly forgets = new MicroBatch<string, void>((ids) => this.drop(ids), MAX_BATCH, 1);

  constructor(private readonly redis: RedisService) {}

  /** The outcome saved for this message, if any. */
  find(messageId: string): Promise<DeliveredOutcome | null> {
    return this.finds.submit(messageId);
  }

  /** Resolves once saved; never rejects (the row is then written without this safety net). */
  save(messageId: string, outcome: DeliveredOutcome): Promise<void> {
    return this.saves.submit({ messageId, outcome }).catch((err: Error) => {
      this.logger.warn(`Could not keep the outcome of ${messageId} before writing it: ${err.message}`);
    });
  }

  /** Once the row holds the outcome. */
  forget(messageId: string): void {
    this.forgets.submit(messageId).catch(() => undefined); // the key expires anyway
  }

  private key(messageId: string): string {
    return this.redis.key('email', 'delivered', messageId);
  }

  private async load(ids: string[]): Promise<PromiseSettledResult<DeliveredOutcome | null>[]> {
    const values = await this.redis.client.mget(ids.map((id) => this.key(id)));
    return allFulfilled(values.map((value) => (value === null ? null : (JSON.parse(value) as DeliveredOutcome))));
  }

  private async store(items: { messageId: string; outcome: DeliveredOutcome }[]): Promise<PromiseSettledResult<void>[]> {
    const pipeline = this.redis.client.pipeline();
    for (const { messageId, outcome } of items) pipeline.set(this.key(messageId), JSON.stringify(outcome), 'EX', TTL_S);
    const results = (await pipeline.exec()) ?? [];
    return items.map((_, i): PromiseSettledResult<void> => {
      const error = results[i]?.[0];
      return error ? { status: 'rejected', reason: error } : { status: 'fulfilled', value: undefined };
    });
  }

  private async drop(ids: string[]): Promise<PromiseSettledResult<void>[]> {
    await this.redis.client.unlink(...ids.map((id) => this.key(id)));
    return allFulfilled(ids.map(() => undefined));
  }
}
