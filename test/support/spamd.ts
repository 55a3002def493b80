import { ChildProcess, spawn } from 'node:child_process';
import { freePort } from './free-port';

/** A content scanner daemon the tests started: where it listens, and how to stop it. */
export interface ScannerDaemon {
  /** `127.0.0.1:<port>`, for INBOUND_SPAMD_ADDRESS / INBOUND_CLAMD_ADDRESS. */
  address: string;
  /** Stops it (SIGTERM, then SIGKILL after 5 s); resolves once it has exited. */
  stop(): Promise<void>;
}

const START_TIMEOUT_MS = 30_000;

/**
 * Debian's SpamAssassin daemon on a free loopback port, for one test file: local rules only (-L: no DNS block
 * lists, no network), no per-user configuration or Bayes (-x), logging to its stderr. Run as root it switches to
 * `nobody`, which spamd requires. Starts in about a second with the compiled rules `sa-compile` leaves.
 */
export async function startSpamd(): Promise<ScannerDaemon> {
  const port = await freePort();
  const args = ['-L', '-x', `--listen=127.0.0.1:${port}`, '--max-children=2', '--min-children=1', '-s', 'stderr'];
  if (process.getuid?.() === 0) args.push('-u', 'nobody');
  const child = spawn('spamd', args, { stdio: ['ignore', 'ignore', 'pipe'], env: withSbin() });
  await started(child, 'spamd', /server started on/);
  return { address: `127.0.0.1:${port}`, stop: () => stopProcess(child) };
}

/** Resolves once the daemon's stderr shows `ready`; rejects with what it said if it exits or takes too long. */
export function started(child: ChildProcess, name: string, ready: RegExp): Promise<void> {
  let output: string | null = '';
  return new Promise<void>((resolve, reject) => {
    const exited = (code: number | null) => fail(new Error(`${name} exited with ${code}:\n${output}`));
    const timer = setTimeout(() => fail(new Error(`${name} did not start within ${START_TIMEOUT_MS} ms:\n${output}`)), START_TIMEOUT_MS);
    const fail = (err: Error) => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(err);
    };
    child.once('error', (err) => fail(new Error(`${name} could not be run (is it installed? see .ci/run): ${err.message}`)));
    child.once('exit', exited);
    child.stderr!.on('data', (chunk: Buffer) => {
      if (output === null) return; // started: the rest of its log is drained and dropped
      output = (output + chunk.toString()).slice(-20_000);
      if (ready.test(output)) {
        output = null;
        clearTimeout(timer);
        child.off('exit', exited);
        resolve();
      }
    });
  });
}

/** The environment with /usr/sbin on PATH, where Debian installs spamd and clamd (a non-root PATH often lacks it). */
export function withSbin(): NodeJS.ProcessEnv {
  return { ...process.env, PATH: `${process.env.PATH ?? ''}:/usr/local/sbin:/usr/sbin` };
}

export function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const killer = setTimeout(() => child.kill('SIGKILL'), 5000);
    child.once('exit', () => {
      clearTimeout(killer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
