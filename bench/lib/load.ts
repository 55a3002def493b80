import type { Measurement } from './types';

// autocannon ships no types; this is the part of its API the bench uses.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const autocannon = require('autocannon') as (options: Record<string, unknown>) => Promise<AutocannonResult>;

interface AutocannonResult {
  requests: { average: number };
  latency: { p50: number; p99: number };
  non2xx: number;
  errors: number;
  timeouts: number;
}

export interface LoadOptions {
  label: string;
  baseline?: string;
  url: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  durationSec: number;
  connections: number;
}

/** One autocannon run; a short warm-up first so JIT and caches are hot. */
export async function measure(options: LoadOptions): Promise<Measurement> {
  const base = {
    url: options.url,
    method: options.method ?? 'GET',
    headers: options.headers,
    body: options.body,
    connections: options.connections,
  };
  await autocannon({ ...base, duration: 2 });
  const result = await autocannon({ ...base, duration: options.durationSec });
  return {
    label: options.label,
    ...(options.baseline ? { baseline: options.baseline } : {}),
    requestsPerSec: result.requests.average,
    latencyP50Ms: result.latency.p50,
    latencyP99Ms: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  };
}

/** Averages rounds measured alternately (A B A B …), so drift in the machine's load hits both sides. */
export function average(label: string, rounds: Measurement[]): Measurement {
  const mean = (pick: (m: Measurement) => number) => rounds.reduce((sum, m) => sum + pick(m), 0) / rounds.length;
  return {
    ...rounds[0],
    label,
    requestsPerSec: Math.round(mean((m) => m.requestsPerSec)),
    latencyP50Ms: mean((m) => m.latencyP50Ms),
    latencyP99Ms: mean((m) => m.latencyP99Ms),
    non2xx: rounds.reduce((sum, m) => sum + m.non2xx, 0),
    errors: rounds.reduce((sum, m) => sum + m.errors, 0),
  };
}

/** requestsPerSec of a measurement over its baseline's, e.g. 0.93. */
export function ratioToBaseline(measurement: Measurement, all: Measurement[]): number | null {
  const baseline = all.find((m) => m.label === measurement.baseline);
  return baseline && baseline.requestsPerSec > 0 ? measurement.requestsPerSec / baseline.requestsPerSec : null;
}
