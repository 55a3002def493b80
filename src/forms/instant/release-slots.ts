/**
 * A per-process limit on concurrent work: `run` waits for a free slot, first come first served. Each held-submission
 * release page keeps one pooled connection for its transaction while the mail it makes takes others, so an uncapped
 * number of them (many forms confirmed at once) would take every connection of the pool and wait for each other.
 */
export class ReleaseSlots {
  private free: number;
  private readonly waiting: (() => void)[] = [];

  constructor(readonly size: number) {
    this.free = size;
  }

  /** Runs `work` once a slot is free, and frees it when `work` settles. */
  async run<T>(work: () => Promise<T>): Promise<T> {
    await this.take();
    try {
      return await work();
    } finally {
      this.give();
    }
  }

  private take(): Promise<void> {
    if (this.free > 0) {
      this.free--;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private give(): void {
    const next = this.waiting.shift();
    // Handed on: the slot stays taken.
    if (next) next();
    else this.free++;
  }
}
