interface Pending<I, O> {
  input: I;
  resolve: (output: O) => void;
  reject: (err: unknown) => void;
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
  ) {}

  submit(input: I): Promise<O> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ input, resolve, reject });
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
      const batch = this.waiting.splice(0, this.maxBatch);
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
}

/** The outcome list of a batch that succeeded as a whole. */
export function allFulfilled<O>(values: O[]): PromiseSettledResult<O>[] {
  return values.map((value) => ({ status: 'fulfilled', value }));
}
