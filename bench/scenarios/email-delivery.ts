import type { KeyObject } from 'node:crypto';
import nodemailer from 'nodemailer';
import { EnvSchema } from '../../src/config/env.schema';
import { arrivalRate, waitUntil } from '../lib/arrivals';
import { prepareSender, startSmtpSink } from '../lib/delivery';
import type { Sender, SmtpSink } from '../lib/delivery';
import { BENCH_DOMAIN, benchMessage } from '../lib/fixtures';
import type { BenchOptions, Measurement, ScenarioResult } from '../lib/types';

const DEFAULTS = new EnvSchema();
/** The default layout's connections and jobs in flight: each worker thread has its own pool and its own concurrency. */
const CONNECTIONS = DEFAULTS.SMTP_POOL_SIZE * DEFAULTS.WORKER_PROCESSES;
const IN_FLIGHT = DEFAULTS.EMAIL_WORKER_CONCURRENCY * DEFAULTS.WORKER_PROCESSES;
const PLAIN_SHARE_TARGET = 0.6;
const ONE_CORE_SPEEDUP_TARGET = 1.6;
const ONE_CORE = '0';

type Layout = 'default' | 'one core';

interface Drain {
  rate: number;
  /** Messages that reached the sink from this app. */
  arrived: number;
  peakRssMb: number;
  peakProcesses: number;
  peakThreads: number;
}

/**
 * (b) Delivery: emails per second from the `email` queue to a local SMTP sink (load the message, pace it,
 * DKIM-sign it, send it over the pooled transport, record the result) in the default layout, against a plain
 * nodemailer pooled loop sending the same message unsigned over as many connections as the default layout opens
 * (SMTP_POOL_SIZE × WORKER_PROCESSES), and against the same pipeline restricted to one core. Each drain: an API-only
 * app accepts BENCH_EMAILS messages and stops, then the delivering app starts and drains them; its rate is taken
 * from the first to the last arrival at the sink. The two layouts alternate within each round (A B, then B A).
 */
export async function run(options: BenchOptions): Promise<ScenarioResult> {
  const count = Number(process.env.BENCH_EMAILS ?? 5000);
  const sink = await startSmtpSink();
  let sender: Sender | undefined;
  try {
    sender = await prepareSender();
    const unsigned: number[] = [];
    const signed: number[] = [];
    const drains: Record<Layout, Drain[]> = { default: [], 'one core': [] };
    for (let round = 0; round < options.rounds; round++) {
      unsigned.push(await plainLoop(sink, count));
      signed.push(await plainLoop(sink, count, sender.dkimKey));
      const layouts: Layout[] = round % 2 === 0 ? ['default', 'one core'] : ['one core', 'default'];
      for (const layout of layouts) drains[layout].push(await drain(sender, sink, count, layout));
      const [byDefault, byOneCore] = [drains.default[round], drains['one core'][round]];
      console.log(
        `  round ${round + 1}: plain loop ${unsigned[round]}/s unsigned, ${signed[round]}/s signed; Mailroom ${byDefault.rate}/s ` +
          `(default layout, ${shape(byDefault)}), ${byOneCore.rate}/s (one core, ${shape(byOneCore)})`,
      );
    }
    const statuses = await sender.statusCounts();
    const accepted = count * options.rounds * 2;

    const mean = (rates: number[]) => Math.round(rates.reduce((sum, r) => sum + r, 0) / rates.length);
    const byDefault = summary(drains.default);
    const byOneCore = summary(drains['one core']);
    const arrived = byDefault.arrived + byOneCore.arrived;
    const loopRate = mean(unsigned);
    const loopLabel = `plain nodemailer pooled loop, unsigned (${CONNECTIONS} connections, ${IN_FLIGHT} in flight)`;
    const row = (label: string, rate: number, baseline?: string): Measurement => ({
      label,
      ...(baseline ? { baseline } : {}),
      requestsPerSec: rate,
      latencyP50Ms: 0,
      latencyP99Ms: 0,
      non2xx: 0,
      errors: 0,
    });
    const share = loopRate > 0 ? byDefault.rate / loopRate : 0;
    const speedup = byOneCore.rate > 0 ? byDefault.rate / byOneCore.rate : 0;
    return {
      scenario: 'email-delivery',
      description: `Emails per second from the queue to a local SMTP sink, ${count} a drain (req/s = emails/s)`,
      measurements: [
        row(loopLabel, loopRate),
        row('plain nodemailer pooled loop, DKIM-signed (same connections)', mean(signed), loopLabel),
        row(`Mailroom, default layout (${shape(byDefault)})`, byDefault.rate, loopLabel),
        row(`Mailroom, one core (taskset -c ${ONE_CORE}, WORKER_PROCESSES=1; ${shape(byOneCore)})`, byOneCore.rate, loopLabel),
      ],
      targets: [
        {
          name: `Mailroom's default layout ≥ ${PLAIN_SHARE_TARGET * 100}% of the unsigned plain loop`,
          met: share >= PLAIN_SHARE_TARGET,
          detail: `${(share * 100).toFixed(1)}% (${byDefault.rate} vs ${loopRate} emails/s)`,
        },
        {
          name: `Mailroom's default layout ≥ ${ONE_CORE_SPEEDUP_TARGET}× the same pipeline on one core`,
          met: speedup >= ONE_CORE_SPEEDUP_TARGET,
          detail: `${speedup.toFixed(2)}× (${byDefault.rate} vs ${byOneCore.rate} emails/s)`,
        },
        {
          name: 'every accepted message reached the sink once and is recorded sent',
          met: arrived === accepted && statuses.sent === accepted,
          detail: `${accepted} accepted, ${arrived} arrived, statuses ${JSON.stringify(statuses)}`,
        },
      ],
    };
  } finally {
    await sender?.close();
    await sink.close();
  }
}

/** The plain loop: `count` sends of the bench message over one pooled transport, IN_FLIGHT at a time; emails per second. */
async function plainLoop(sink: SmtpSink, count: number, dkimKey?: KeyObject): Promise<number> {
  const { to, from, subject, text, html } = JSON.parse(benchMessage()) as Record<string, string>;
  const dkim = dkimKey && { domainName: BENCH_DOMAIN, keySelector: 'mr1', privateKey: dkimKey };
  const transport = nodemailer.createTransport({ pool: true, url: sink.url, maxConnections: CONNECTIONS, maxMessages: Infinity } as never);
  const start = sink.received;
  let next = 0;
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < count) {
        next++;
        await transport.sendMail({ to, from, subject, text, html, ...(dkim ? { dkim } : {}) });
      }
    }),
  );
  transport.close();
  return arrivalRate(sink.arrivals, start, count);
}

/**
 * Accepts `count` messages, then drains them with a delivering app in `layout` and waits until each is recorded
 * sent; `arrived` is counted once the app has stopped, so a message sent twice shows.
 */
async function drain(sender: Sender, sink: SmtpSink, count: number, layout: Layout): Promise<Drain> {
  const acceptSec = await sender.accept(count);
  const start = sink.received;
  const app = await sender.startDeliverer(
    { SMTP_URL: sink.url, SMTP_MAX_RATE: '1000000', ...(layout === 'one core' ? { WORKER_PROCESSES: '1' } : {}) },
    layout === 'one core' ? { cpuList: ONE_CORE } : {},
  );
  let rate: number;
  try {
    await waitUntil(() => sink.received - start >= count, 600_000);
    rate = arrivalRate(sink.arrivals, start, count);
    // The results are written after the sends: the next drain should not start under this one's tail.
    await waitUntil(
      async () => {
        const statuses = await sender.statusCounts();
        return !statuses.queued && !statuses.deferred;
      },
      60_000,
      200,
    ).catch(() => console.warn(`  ${layout}: messages still awaiting delivery 60 s after the last arrival`));
  } finally {
    await app.stop();
  }
  console.log(`  ${layout}: accepted ${count} in ${acceptSec.toFixed(1)} s, drained at ${rate} emails/s`);
  return {
    rate,
    arrived: sink.received - start,
    peakRssMb: app.peakRssMb(),
    peakProcesses: app.peakProcesses(),
    peakThreads: app.peakThreads(),
  };
}

function summary(drains: Drain[]): Drain {
  return {
    rate: Math.round(drains.reduce((sum, d) => sum + d.rate, 0) / drains.length),
    arrived: drains.reduce((sum, d) => sum + d.arrived, 0),
    peakRssMb: Math.max(...drains.map((d) => d.peakRssMb)),
    peakProcesses: Math.max(...drains.map((d) => d.peakProcesses)),
    peakThreads: Math.max(...drains.map((d) => d.peakThreads)),
  };
}

/** What the delivering app was made of at its largest, and its memory. */
function shape(drain: Drain): string {
  return `${drain.peakProcesses} process(es), ${drain.peakThreads} threads, RSS peak ${drain.peakRssMb} MB`;
}
