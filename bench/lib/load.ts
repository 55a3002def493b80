import { Agent, request } from 'node:http';
import type { Measurement } from './types';

// autocannon ships no types; this is the part of its API the bench uses.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const autocannon = require('autocannon') as (options: Record<string, unknown>) => Promise<AutocannonResult>;

/** Seconds at the target rate before an open-loop measurement starts. */
const WARMUP_SEC = 3;

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

export interface RateOptions {
  label: string;
  url: string;
  headers: Record<string, string>;
  /** The POST body, or one made per request; none: GET. */
  body?: string | (() => string);
  rate: number;
  durationSec: number;
  /** Which statuses count as success (default 2xx); the others are reported as non2xx. */
  success?: (status: number) => boolean;
  /** Called between the warm-up and the recorded run, e.g. to reset a measurement of the app's own. */
  afterWarmup?: () => Promise<void>;
}

/**
 * Open-loop load at a steady rate: requests start evenly spaced, whether or not earlier ones finished (a
 * closed-loop tool such as autocannon with overallRate fires each second's quota at once, which measures
 * bursts at full speed instead of latency at that rate).
 */
export async function measureAtRate(options: RateOptions): Promise<Measurement> {
  const { label, headers, body, rate, durationSec } = options;
  const success = options.success ?? ((status: number) => status >= 200 && status < 300);
  const agent = new Agent({ keepAlive: true, maxSockets: 256 });
  const target = new URL(options.url);
  const latencies: number[] = [];
  let non2xx = 0;
  let errors = 0;
  const one = () =>
    new Promise<void>((resolve) => {
      const payload = typeof body === 'function' ? body() : body;
      const started = process.hrtime.bigint();
      const req = request(
        {
          agent,
          host: target.hostname,
          port: target.port,
          path: target.pathname,
          method: payload === undefined ? 'GET' : 'POST',
          headers: payload === undefined ? headers : { ...headers, 'Content-Length': Buffer.byteLength(payload) },
        },
        (res) => {
          res.resume();
          res.on('end', () => {
            latencies.push(Number(process.hrtime.bigint() - started) / 1e6);
            if (!success(res.statusCode!)) non2xx++;
            resolve();
          });
        },
      );
      req.on('error', () => {
        errors++;
        resolve();
      });
      req.end(payload);
    });
  /** Starts `rate` requests a second, evenly spaced, for `seconds`; resolves when all of them answered. */
  const fire = async (seconds: number) => {
    const total = rate * seconds;
    const inFlight: Promise<void>[] = [];
    const start = Date.now();
    let sent = 0;
    await new Promise<void>((resolve) => {
      const timer = setInterval(() => {
        const due = Math.min(total, Math.floor(((Date.now() - start) / 1000) * rate));
        while (sent < due) {
          inFlight.push(one());
          sent++;
        }
        if (sent >= total) {
          clearInterval(timer);
          resolve();
        }
      }, 1);
    });
    await Promise.all(inFlight);
    return total / ((Date.now() - start) / 1000);
  };
  // The steady state is measured: the first seconds after a closed-loop peak also carry the database's
  // catching up with it (autovacuum of the tables just filled), which is not latency at this rate.
  await fire(WARMUP_SEC);
  await options.afterWarmup?.();
  latencies.length = 0;
  non2xx = 0;
  errors = 0;
  const achieved = await fire(durationSec);
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const pick = (q: number) =>
    latencies.length ? Math.round(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] * 10) / 10 : 0;
  return {
    label,
    requestsPerSec: Math.round(achieved),
    latencyP50Ms: pick(0.5),
    latencyP99Ms: pick(0.99),
    non2xx,
    errors,
  };
}
