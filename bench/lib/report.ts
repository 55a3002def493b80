import { writeFileSync } from 'node:fs';
import { ratioToBaseline } from './load';
import type { ScenarioResult } from './types';

/** Prints one table of every measurement, with its ratio to its baseline, and each target's verdict. */
export function printReport(results: ScenarioResult[]): void {
  const rows = results.flatMap((result) =>
    result.measurements.map((m) => {
      const ratio = ratioToBaseline(m, result.measurements);
      return {
        scenario: result.scenario,
        measurement: m.label,
        'req/s': m.requestsPerSec,
        'p50 ms': m.latencyP50Ms,
        'p99 ms': m.latencyP99Ms,
        'vs baseline': ratio === null ? '' : `${(ratio * 100).toFixed(1)}%`,
        non2xx: m.non2xx,
        errors: m.errors,
      };
    }),
  );
  console.table(rows);
  for (const result of results) {
    if (result.peakServiceRssMb !== undefined)
      console.log(`peak RSS of the service processes in ${result.scenario}: ${result.peakServiceRssMb} MB`);
  }
  for (const result of results) {
    for (const target of result.targets ?? []) {
      console.log(`${target.met ? 'MET   ' : 'MISSED'} ${result.scenario}: ${target.name} (${target.detail})`);
    }
  }
}

export function writeResults(path: string, results: ScenarioResult[], meta: Record<string, unknown>): void {
  writeFileSync(path, JSON.stringify({ ...meta, results }, null, 2) + '\n');
}
