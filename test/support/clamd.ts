import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port';
import { ScannerDaemon, stopProcess, withSbin } from './spamd';

/**
 * The EICAR anti-virus test file (https://www.eicar.org/download-anti-malware-testfile/), put together at run time
 * so that no scanner on a developer's machine flags this source file.
 */
export const EICAR = Buffer.from(['X5O!P%@AP[4\\PZX54(P^)7CC)7}$', 'EICAR-STANDARD-ANTIVIRUS-TEST-FILE', '!$H+H*'].join(''), 'latin1');
/** The name clamd reports for EICAR with the test database (`.UNOFFICIAL`: a database of our own). */
export const EICAR_SIGNATURE = 'Eicar-Test-Signature.UNOFFICIAL';

const START_TIMEOUT_MS = 30_000;
/** One PING attempt waits at most this long: a clamd still loading may take the connection and not answer it. */
const PING_TIMEOUT_MS = 1000;

/**
 * Debian's ClamAV daemon on a free loopback port, for one test file, with a database of one signature: EICAR's MD5
 * (a `.hdb` file). freshclam's databases are not needed (nor reachable here), and clamd loads this one at once.
 */
export async function startClamd(): Promise<ScannerDaemon> {
  const dir = mkdtempSync(join(tmpdir(), 'mailroom-clamd-'));
  const database = join(dir, 'db');
  mkdirSync(database);
  writeFileSync(join(database, 'eicar.hdb'), `${createHash('md5').update(EICAR).digest('hex')}:${EICAR.length}:Eicar-Test-Signature\n`);
  const port = await freePort();
  const config = join(dir, 'clamd.conf');
  writeFileSync(
    config,
    [`DatabaseDirectory ${database}`, `TCPSocket ${port}`, 'TCPAddr 127.0.0.1', 'Foreground yes', 'StreamMaxLength 100M', ''].join('\n'),
  );
  const child = spawn('clamd', ['-c', config], { stdio: ['ignore', 'ignore', 'pipe'], env: withSbin() });
  let output = '';
  child.stderr.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-20_000)));
  let exitedEarly!: (code: number | null) => void;
  const spawned = new Promise<never>((_, reject) => {
    child.once('error', (err) => reject(new Error(`clamd could not be run (is it installed? see .ci/run): ${err.message}`)));
    exitedEarly = (code) => reject(new Error(`clamd exited with ${code}:\n${output}`));
    child.once('exit', exitedEarly);
  });
  const stop = async () => {
    await stopProcess(child);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await Promise.race([spawned, answersPing(port)]);
  } catch (err) {
    await stop();
    throw err;
  }
  child.off('exit', exitedEarly);
  return { address: `127.0.0.1:${port}`, stop };
}

/** Resolves once clamd answers PING with PONG on `port`, trying every 50 ms, each try for PING_TIMEOUT_MS at most. */
async function answersPing(port: number): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline) {
    const answer = await new Promise<string>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      let text = '';
      const timer = setTimeout(() => socket.destroy(), Math.min(PING_TIMEOUT_MS, Math.max(1, deadline - Date.now())));
      socket.on('connect', () => socket.write('zPING\0'));
      socket.on('data', (chunk: Buffer) => (text += chunk.toString()));
      socket.on('close', () => {
        clearTimeout(timer);
        resolve(text);
      });
      socket.on('error', () => undefined); // followed by 'close'
    });
    if (answer.startsWith('PONG')) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`clamd did not answer PING within ${START_TIMEOUT_MS} ms`);
}
