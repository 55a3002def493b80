import { Logger } from '@nestjs/common';
import type { DataSource } from 'typeorm';

const PURGE_INTERVAL_MS = 15 * 60 * 1000;
const PURGE_BATCH = 500;

type SweptRowsListener = (kind: string, rows: number) => void;

let sweptRowsListener: SweptRowsListener = () => undefined;

/** Told of the rows every committed batch removed or cleared: metrics.ts counts them (mailroom_retention_swept_total). */
export function onSweptRows(listener: SweptRowsListener): void {
  sweptRowsListener = listener;
}

export interface BatchedSweep {
  /** What was swept (the `kind` label of mailroom_retention_swept_total). */
  kind: string;
  /** Rows one batch removes at most. */
  size: number;
  /** Batches one call runs at most: the rest waits for the next run, so that one run never holds a lock for long. */
  maxBatches?: number;
}

/**
 * Runs `batch` (one short statement or transaction that removes or clears at most `size` rows and answers how
 * many) until one finds nothing, counting every batch in /metrics as it commits. Many short statements instead
 * of one: each holds its row locks for a moment, and the table's other writers go on between them. A short batch
 * does not end the sweep: rows skipped as locked, or a batch also bounded by bytes, leave more behind.
 */
export async function sweepInBatches(sweep: BatchedSweep, batch: (size: number) => Promise<number>): Promise<number> {
  let total = 0;
  for (let round = 0; round < (sweep.maxBatches ?? Infinity); round++) {
    const rows = await batch(sweep.size);
    if (rows > 0) sweptRowsListener(sweep.kind, rows);
    total += rows;
    if (rows === 0) break;
  }
  return total;
}

/**
 * Deletes a table's rows whose `expires_at` has passed, every 15 minutes while the process runs, in batches.
 * Every instance does (SKIP LOCKED: instances purging at once take different rows); reads skip expired rows
 * themselves, so this only keeps the table small.
 */
export class ExpiredRows {
  private readonly logger = new Logger(ExpiredRows.name);
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly dataSource: DataSource,
    private readonly table: string,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.purge(), PURGE_INTERVAL_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  async purge(): Promise<void> {
    try {
      await sweepInBatches({ kind: this.table, size: PURGE_BATCH }, async (size) => {
        const [, deleted]: [unknown, number] = await this.dataSource.query(
          `DELETE FROM ${this.table} WHERE ctid IN (SELECT ctid FROM ${this.table} WHERE expires_at <= now() LIMIT $1 FOR UPDATE SKIP LOCKED)`,
          [size],
        );
        return deleted;
      });
    } catch (err) {
      this.logger.warn(`Could not purge the expired rows of ${this.table}: ${(err as Error).message}`);
    }
  }
}
