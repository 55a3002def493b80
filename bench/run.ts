import 'reflect-metadata';
import { execSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { openPeakWindow } from './lib/process-tree';
import { printReport, writeResults } from './lib/report';
import type { BenchOptions, ScenarioModule, ScenarioResult } from './lib/types';

/** The service's processes (each app and the workers it forks) may hold at most this much at once. */
const SERVICE_RSS_TARGET_MB = 300;

/**
 * `npm run bench [-- <name filter>…]`: runs every bench/scenarios/*.ts (or those whose file name contains
 * a filter), prints one table and writes bench/results.json. See bench/README.md.
 */
async function main(): Promise<void> {
  const filters = process.argv.slice(2);
  // The apps run the build, as `npm start` does (bench/lib/app.ts).
  execSync('npm run build --silent', { cwd: join(__dirname, '..'), stdio: 'inherit' });
  const options: BenchOptions = {
    durationSec: Number(process.env.BENCH_DURATION ?? 10),
    connections: Number(process.env.BENCH_CONNECTIONS ?? 50),
    rounds: Number(process.env.BENCH_ROUNDS ?? 2),
  };
  const dir = join(__dirname, 'scenarios');
  const files = readdirSync(dir)
    .filter((file) => file.endsWith('.ts'))
    .filter((file) => filters.length === 0 || filters.some((f) => file.includes(f)))
    .sort();
  if (files.length === 0) throw new Error(`no scenario in ${dir} matches ${filters.join(', ')}`);

  const results: ScenarioResult[] = [];
  const wholeBench = openPeakWindow();
  for (const file of files) {
    console.log(`\n== ${file}`);
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const scenario = require(join(dir, file)) as ScenarioModule;
    const window = openPeakWindow();
    const result = await scenario.run(options);
    window.close();
    results.push({ ...result, peakServiceRssMb: window.peakRssMb() });
    console.log(`  peak RSS of the service processes: ${window.peakRssMb()} MB`);
  }
  wholeBench.close();
  results.push(memoryResult(wholeBench.peakRssMb(), results));
  printReport(results);
  writeResults(join(__dirname, 'results.json'), results, {
    date: new Date().toISOString(),
    node: process.version,
    cpus: cpus().length,
    options,
  });
  const missed = results.flatMap((r) => r.targets ?? []).filter((t) => !t.met);
  process.exitCode = missed.length > 0 ? 1 : 0;
}

/** The memory target of the whole bench, as a result of its own so that a miss fails the run like any other. */
function memoryResult(peakMb: number, results: ScenarioResult[]): ScenarioResult {
  const largest = results.reduce((a, b) => ((b.peakServiceRssMb ?? 0) > (a.peakServiceRssMb ?? 0) ? b : a));
  return {
    scenario: 'memory',
    description: 'Peak resident memory of one app: its process, its threads and its descendants',
    measurements: [],
    targets: [
      {
        name: `peak RSS of the service processes ≤ ${SERVICE_RSS_TARGET_MB} MB over the whole bench`,
        met: peakMb <= SERVICE_RSS_TARGET_MB,
        detail: `${peakMb} MB, the largest in ${largest.scenario}`,
      },
    ],
  };
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
