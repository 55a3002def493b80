import { Logger } from '@nestjs/common';
import type { DataSource } from 'typeorm';

const PURGE_INTERVAL_MS = 15 * 60 * 1000;

/**
 * Deletes a table's rows whose `expires_at` has passed, every 15 minutes while the process runs. Every instance
 * does (the DELETE is idempotent); reads skip expired rows themselves, so this only keeps the table small.
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
      await this.dataSource.query(`DELETE FROM ${this.table} WHERE expires_at <= now()`);
    } catch (err) {
      this.logger.warn(`Could not purge the expired rows of ${this.table}: ${(err as Error).message}`);
    }
  }
}
