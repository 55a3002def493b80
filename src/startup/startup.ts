import { createServer } from 'node:net';
import { constants } from 'node:os';
import { isMainThread } from 'node:worker_threads';
import { Logger } from '@nestjs/common';
import { nestLogger, rootLogger } from '../logging/root-logger';
import { AppConfigService, loadConfigOrExit } from '../config/app-config.service';
import { startupWarnings } from '../config/startup-warnings';
import { listenError, StartupError } from './startup-error';
import { waitForStores } from './store-checks';

const STOP_SIGNALS = ['SIGTERM', 'SIGINT'] as const;

function stopNow(signal: NodeJS.Signals): void {
  rootLogger().info(`${signal} during start-up: stopped`);
  process.exit(128 + constants.signals[signal]);
}

/**
 * What every entry point (main.ts, worker.ts) does before it builds its Nest application: until `started()`,
 * SIGTERM and SIGINT stop the process at once (nothing has been accepted that would need draining); the
 * configuration is loaded (a bad one is a fatal line per variable, exit 1); every log line is JSON from the first
 * (or text with LOG_FORMAT=pretty); the configuration's warnings are said once per process; and PostgreSQL and
 * Redis are waited for, a bounded time.
 */
export async function beginStartup(overrides: Record<string, string> = {}): Promise<AppConfigService> {
  if (isMainThread) for (const signal of STOP_SIGNALS) process.on(signal, stopNow);
  const config = loadConfigOrExit(overrides);
  const logger = rootLogger(config.logSettings);
  Logger.overrideLogger(nestLogger(logger));
  if (isMainThread) {
    for (const warning of startupWarnings(config)) logger.warn(warning);
    await Promise.all(portsToOpen(config).map(([variable, port, host]) => ensurePortFree(variable, port, host))).catch(failStartup);
    await waitForStores(config, (message) => logger.warn(message)).catch(failStartup);
  }
  return config;
}

/** The ports this process will listen on, with their variables: checked first, so a taken one fails in a moment. */
function portsToOpen(config: AppConfigService): [variable: string, port: number, host?: string][] {
  const { env } = config;
  const ports: [string, number, string?][] = [];
  if (config.runsApi) ports.push(['PORT', env.PORT]);
  if (env.APP_ROLE === 'worker') ports.push(['WORKER_PORT', env.WORKER_PORT]);
  if (config.runsWorkers) ports.push(['INBOUND_SMTP_PORT', env.INBOUND_SMTP_PORT, env.INBOUND_SMTP_HOST]);
  return ports.filter(([, port]) => port > 0);
}

function ensurePortFree(variable: string, port: number, host?: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (err) => reject(listenError(err, variable, port) ?? err));
    probe.listen(port, host, () => probe.close(() => resolve()));
  });
}

/** Start-up is over: from now on a signal is a graceful shutdown (Nest's shutdown hooks). */
export function started(): void {
  for (const signal of STOP_SIGNALS) process.off(signal, stopNow);
}

/** Logs why start-up failed (one line for a known reason, with the error otherwise) and exits 1. */
export function failStartup(err: unknown): never {
  const logger = rootLogger();
  if (err instanceof StartupError) logger.fatal(err.message);
  else logger.fatal({ err }, `Start-up failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
}
