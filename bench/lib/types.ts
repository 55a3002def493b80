/** One load run against one route. */
export interface Measurement {
  /** What was measured, unique within its scenario: "whoami, limiter off". */
  label: string;
  /** Label of the measurement of the same scenario this one is compared with. */
  baseline?: string;
  requestsPerSec: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
  /** Responses that were not 2xx (a bench whose route answers 429 measures the wrong thing). */
  non2xx: number;
  errors: number;
}

/** What a scenario module returns. */
export interface ScenarioResult {
  scenario: string;
  description: string;
  measurements: Measurement[];
  /** Pass/fail targets the scenario checks itself, e.g. "limiter costs ≤ 15% of throughput". */
  targets?: { name: string; met: boolean; detail: string }[];
  /** The largest resident memory of one app (its process, threads and descendants) during the scenario (set by bench/run.ts). */
  peakServiceRssMb?: number;
}

/**
 * A bench scenario: a module in bench/scenarios/ exporting `run`. It boots the apps it needs with the
 * helpers in bench/lib and stops them before returning.
 */
export interface ScenarioModule {
  run(options: BenchOptions): Promise<ScenarioResult>;
}

export interface BenchOptions {
  /** Seconds per measurement (BENCH_DURATION, default 10). */
  durationSec: number;
  /** Concurrent connections (BENCH_CONNECTIONS, default 50). */
  connections: number;
  /** Alternating rounds per measurement, averaged (BENCH_ROUNDS, default 2). */
  rounds: number;
}
