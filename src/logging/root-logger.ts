import type { LoggerService } from '@nestjs/common';
import pino, { type Logger as Pino } from 'pino';
import pretty from 'pino-pretty';
import { Logger as NestPinoLogger, PinoLogger } from 'nestjs-pino';

export interface LogSettings {
  level: string;
  format: 'json' | 'pretty';
}

let root: Pino | undefined;

/**
 * The one pino logger of this thread: start-up messages, Nest's own lines and the request logs (nestjs-pino is
 * given it) all go through it, so that the output is JSON from its first line, or text for a terminal when
 * LOG_FORMAT=pretty. Made on first use; the settings of the first call stay.
 */
export function rootLogger(settings: LogSettings = { level: 'info', format: 'json' }): Pino {
  root ??=
    settings.format === 'pretty'
      ? pino({ level: settings.level }, pretty({ sync: true, colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' }))
      : pino({ level: settings.level });
  return root;
}

/** Nest's LoggerService over the root logger, for NestFactory's `logger` option and Logger.overrideLogger(). */
export function nestLogger(logger: Pino = rootLogger()): LoggerService {
  return new NestPinoLogger(new PinoLogger({ pinoHttp: { logger } }), {});
}
