interface Pending<I, O> {
  input: I;
  weight: number;
  resolve: (output: O) => void;
  reject: (err: unknown) => void;
}

export interface BatchWeight<I> {
  /** What one input weighs (bytes, say). */
  weigh: (input: I) => number;
  /** A batch stops growing once it would weigh more; an input heavier than this runs alone. */
  max: number;
}

/**
 * Runs the calls made in one event-loop turn, and those made while earlier batches are still running,
 * together: `run` gets the inputs in call order and answers one outcome per input, in the same order (so one
 * input can fail alone); when `run` itself rejects, every call of the batch does. An
 * idle caller waits only for the current turn to end; a busy one shares a round trip with its neighbours.
 */
export class MicroBatch<I, O> {
  private readonly waiting: Pending<I, O>[] = [];
  private running = 0;
  private scheduled = false;

  constructor(
    private readonly run: (inputs: I[]) => Promise<PromiseSettledResult<O>[]>,
    private readonly maxBatch: number,
    private readonly maxConcurrent: number,
    private readonly weight?: BatchWeight<I>,
  ) {}

  submit(input: I): Promise<O> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ input, weight: this.weight?.weigh(input) ?? 0, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => {
          this.scheduled = false;
          this.flush();
        });
      }
    });
  }

  private flush(): void {
    while (this.waiting.length > 0 && this.running < this.maxConcurrent) {
      const batch = this.waiting.splice(0, this.batchLength());
      this.running++;
      this.run(batch.map((p) => p.input))
        .then(
          (outcomes) =>
            batch.forEach((p, i) => {
              const outcome = outcomes[i];
              if (outcome.status === 'fulfilled') p.resolve(outcome.value);
              else p.reject(outcome.reason);
            }),
          (err) => batch.forEach((p) => p.reject(err)),
        )
        .finally(() => {
          this.running--;
          this.flush();
        });
    }
  }

  /** How many of the waiting calls the next batch takes: up to maxBatch, and (always at least one) up to the weight cap. */
  private batchLength(): number {
    const count = Math.min(this.maxBatch, this.waiting.length);
    if (!this.weight) return count;
    let total = this.waiting[0].weight;
    let length = 1;
    while (length < count && total + this.waiting[length].weight <= this.weight.max) total += this.waiting[length++].weight;
    return length;
  }
}

/** The outcome list of a batch that succeeded as a whole. */
export function allFulfilled<O>(values: O[]): PromiseSettledResult<O>[] {
  return values.map((value) => ({ status: 'fulfilled', value }));
}

/** The promise's outcome, as Promise.allSettled gives it: for running the inputs of a failed batch one by one. */
export function settle<T>(promise: Promise<T>): Promise<PromiseSettledResult<T>> {
  return promise.then(
    (value) => ({ status: 'fulfilled', value }),
    (reason: unknown) => ({ status: 'rejected', reason }),
  );
}
