import 'reflect-metadata';
import { readdirSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { printReport, writeResults } from './lib/report';
import type { BenchOptions, ScenarioModule, ScenarioResult } from './lib/types';

/**
 * `npm run bench [-- <name filter>…]`: runs every bench/scenarios/*.ts (or those whose file name contains
 * a filter), prints one table and writes bench/results.json. See bench/README.md.
 */
async function main(): Promise<void> {
  const filters = process.argv.slice(2);
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
  for (const file of files) {
    console.log(`\n== ${file}`);
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const scenario = require(join(dir, file)) as ScenarioModule;
    results.push(await scenario.run(options));
  }
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

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
