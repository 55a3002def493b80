/**
 * A budget of bytes that one process (or thread) holds at once: request bodies being read, inbound messages read
 * back from their spool files, messages being delivered. `tryAcquire` refuses at once what does not fit (a flood is
 * answered, not queued); `acquire` waits its turn, first come first served, and lets a caller heavier than the whole
 * budget go alone once nothing else is held.
 */
export class ByteBudget {
  private held = 0;
  private readonly waiting: { bytes: number; grant: () => void }[] = [];

  constructor(readonly capacity: number) {}

  /** Bytes held now. */
  get inUse(): number {
    return this.held;
  }

  /** Takes `bytes` if they fit beside what is held and nobody waits; else null and nothing taken. */
  tryAcquire(bytes: number): (() => void) | null {
    const weight = Math.max(0, bytes);
    if (this.waiting.length > 0 || this.held + weight > this.capacity) return null;
    this.held += weight;
    return this.releaser(weight);
  }

  /** Resolves once `bytes` are taken, with the function that gives them back (a second call does nothing). */
  async acquire(bytes: number): Promise<() => void> {
    const weight = Math.max(0, bytes);
    if (this.waiting.length > 0 || !this.fitsOrAlone(weight)) {
      await new Promise<void>((grant) => this.waiting.push({ bytes: weight, grant }));
    } else {
      this.held += weight;
    }
    return this.releaser(weight);
  }

  private releaser(weight: number): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.held -= weight;
      this.grantWaiting();
    };
  }

  private fitsOrAlone(bytes: number): boolean {
    return this.held === 0 || this.held + bytes <= this.capacity;
  }

  private grantWaiting(): void {
    while (this.waiting.length > 0 && this.fitsOrAlone(this.waiting[0].bytes)) {
      const next = this.waiting.shift()!;
      this.held += next.bytes;
      next.grant();
    }
  }
}
