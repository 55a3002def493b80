import { waitUntil } from '../lib/arrivals';
import { prepareSender, startSmtpSink } from '../lib/delivery';
import type { Sender, SmtpSink } from '../lib/delivery';
import type { BenchOptions, Measurement, ScenarioResult } from '../lib/types';

const SMALL = 1_000;
const LARGE = Number(process.env.BENCH_BACKLOG ?? 100_000);
/** The delivering app may hold at most this much more at its peak with the large backlog queued than with the small one. */
const RSS_GROWTH_TARGET_MB = 32;
const ACCEPT_IN_FLIGHT = 8;

interface Window {
  acceptSec: number;
  seconds: number;
  delivered: number;
  peakRssMb: number;
  peakProcesses: number;
  peakThreads: number;
}

/**
 * A large backlog does not grow the delivering service: the peak RSS of a delivering app (default layout, its
 * process and its workers) while it delivers from a backlog of BENCH_BACKLOG (default 100,000) messages, against
 * the same app delivering a backlog of 1,000, measured first. Each backlog is accepted through POST /email/batch
 * (500 a call, 8 calls in flight) by an API-only app that then stops; a delivering app then starts on it and runs
 * BENCH_DURATION seconds and until it has delivered 1,000 (the small backlog all). The pacer (SMTP_MAX_RATE) is set so that the small
 * backlog lasts that long, so both windows deliver about as many messages and differ only in what is queued.
 */
export async function run(options: BenchOptions): Promise<ScenarioResult> {
  const pace = Math.ceil(SMALL / options.durationSec);
  const sink = await startSmtpSink();
  let sender: Sender | undefined;
  try {
    sender = await prepareSender();
    const small = await deliverFromBacklog(sender, sink, SMALL, pace, options.durationSec);
    const large = await deliverFromBacklog(sender, sink, LARGE, pace, options.durationSec);

    const row = (label: string, rate: number): Measurement => ({
      label,
      requestsPerSec: rate,
      latencyP50Ms: 0,
      latencyP99Ms: 0,
      non2xx: 0,
      errors: 0,
    });
    const delivering = (size: number, w: Window) =>
      row(
        `delivering with ${size} queued (pacer ${pace}/s): ${w.delivered} in ${w.seconds.toFixed(1)} s, ` +
          `${w.peakProcesses} process(es), ${w.peakThreads} threads, RSS peak ${w.peakRssMb} MB`,
        Math.round(w.delivered / w.seconds),
      );
    const growth = large.peakRssMb - small.peakRssMb;
    return {
      scenario: 'delivery-backlog',
      description: `Peak RSS of the delivering app with ${LARGE} messages queued against ${SMALL} (req/s = messages/s)`,
      measurements: [
        row(`accepting ${LARGE} through POST /email/batch: ${large.acceptSec.toFixed(1)} s`, Math.round(LARGE / large.acceptSec)),
        delivering(SMALL, small),
        delivering(LARGE, large),
      ],
      targets: [
        {
          name: `peak RSS of the delivering app with ${LARGE} queued ≤ with ${SMALL} queued + ${RSS_GROWTH_TARGET_MB} MB`,
          met: growth <= RSS_GROWTH_TARGET_MB,
          detail: `${large.peakRssMb} MB vs ${small.peakRssMb} MB (${growth >= 0 ? '+' : ''}${growth} MB)`,
        },
      ],
    };
  } finally {
    await sender?.close();
    await sink.close();
  }
}

/** Accepts `size` messages, then runs a delivering app on them for `durationSec` (and until `SMALL` of them are out). */
async function deliverFromBacklog(sender: Sender, sink: SmtpSink, size: number, pace: number, durationSec: number): Promise<Window> {
  const acceptSec = await sender.accept(size, { inFlight: ACCEPT_IN_FLIGHT, recipient: (i) => `reader${i}@example.org` });
  console.log(`  accepted ${size} in ${acceptSec.toFixed(1)} s (${Math.round(size / acceptSec)}/s)`);
  const start = sink.received;
  const app = await sender.startDeliverer({ SMTP_URL: sink.url, SMTP_MAX_RATE: String(pace) });
  const started = performance.now();
  try {
    await new Promise((resolve) => setTimeout(resolve, durationSec * 1000));
    await waitUntil(() => sink.received - start >= Math.min(size, SMALL), 120_000);
    const window = {
      acceptSec,
      seconds: (performance.now() - started) / 1000,
      delivered: sink.received - start,
      peakRssMb: app.peakRssMb(),
      peakProcesses: app.peakProcesses(),
      peakThreads: app.peakThreads(),
    };
    console.log(
      `  ${size} queued: ${window.delivered} delivered in ${window.seconds.toFixed(1)} s, RSS ${app.rssMb()} MB at the end, ` +
        `peak ${window.peakRssMb} MB (${window.peakProcesses} process(es), ${window.peakThreads} threads)`,
    );
    return window;
  } finally {
    await app.stop();
  }
}
