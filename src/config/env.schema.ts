import { availableParallelism } from 'node:os';
import { plainToInstance, Transform } from 'class-transformer';
import {
  IsBoolean,
  IsIn,
  IsInt,
  IsNumber,
  IsOptional,
  IsString,
  IsUrl,
  Matches,
  Max,
  Min,
  ValidateBy,
  validateSync,
} from 'class-validator';
import type { LogSettings } from '../logging/root-logger';
import { redisUrlProblem } from './redis-url';
import { MailEnvSchema, toBoolean, toInt } from './mail-env.schema';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
/** An encryption key: 32 bytes as 64 hex characters or base64. */
const ENCRYPTION_KEY_SHAPE = '([0-9a-fA-F]{64}|[A-Za-z0-9+/]{43}=?)';

/**
 * Every environment variable Mailroom reads, with its default (D-35): the process, its stores, HTTP, keys and
 * limits here, the mail pipelines' in MailEnvSchema. Nothing outside src/config reads process.env; a bad value stops
 * start-up with a message naming the variable.
 */
export class EnvSchema extends MailEnvSchema {
  @IsIn(['development', 'production', 'test'])
  NODE_ENV: 'development' | 'production' | 'test' = 'development';

  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(65535)
  PORT = 3000;

  /** The address users and mail recipients reach this service at (links, redirects, docs). Empty: http://localhost:<PORT>. */
  @IsOptional()
  @IsUrl({ require_tld: false, require_protocol: true })
  PUBLIC_URL?: string = undefined;

  @Matches(/^postgres(ql)?:\/\//, { message: 'DATABASE_URL must be a postgres:// URL' })
  DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/mailroom';

  /** A read replica of DATABASE_URL for the analytics reads; unset, they read DATABASE_URL. */
  @IsOptional()
  @Matches(/^postgres(ql)?:\/\//, { message: 'DATABASE_READ_URL must be a postgres:// URL' })
  DATABASE_READ_URL?: string = undefined;

  /**
   * PostgreSQL connections one process may hold to DATABASE_URL (and as many to DATABASE_READ_URL), all its threads
   * together: APP_ROLE=all shares it out among the HTTP thread and the worker threads (src/config/connection-budget.ts).
   */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(1000)
  DATABASE_POOL_SIZE = 20;

  @Transform(toBoolean)
  @IsBoolean()
  MIGRATIONS_RUN = true;

  /** One server (redis://, rediss://), a master through Sentinel (redis-sentinel://) or a Cluster (redis-cluster://). */
  @ValidateBy({
    name: 'isRedisUrl',
    validator: {
      validate: (value) => typeof value === 'string' && redisUrlProblem(value) === null,
      defaultMessage: (args) => `REDIS_URL ${redisUrlProblem(String(args?.value))}`,
    },
  })
  REDIS_URL = 'redis://127.0.0.1:6379';

  /**
   * Prefix of every Redis key and channel, so that several deployments (or test runs) share one Redis. On a
   * Cluster it is made a hash tag ({mailroom}:) unless it holds one.
   */
  @Matches(/^[A-Za-z0-9:_{}-]*$/, { message: 'REDIS_KEY_PREFIX may hold letters, digits, ":", "_", "-" and a {hash tag}' })
  REDIS_KEY_PREFIX = 'mailroom:';

  @IsIn(['api', 'worker', 'all'])
  APP_ROLE: 'api' | 'worker' | 'all' = 'all';

  /**
   * With APP_ROLE=all, how many worker threads run the queues beside the thread that serves HTTP (the name is
   * the issue's); 0 runs everything on the one thread. Default: one fewer than the cores, at least one: the HTTP
   * thread, V8's collector threads and libuv's signing pool need the rest (docs/decisions.md, "Performance"). Fewer
   * run when DATABASE_POOL_SIZE or SMTP_POOL_SIZE cannot give each a connection (src/config/connection-budget.ts).
   */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(64)
  WORKER_PROCESSES = Math.max(1, availableParallelism() - 1);

  @IsIn(LOG_LEVELS)
  LOG_LEVEL = 'info';

  /** `json`: one JSON object a line, from the first line on (for log collectors); `pretty`: coloured text for a terminal. */
  @IsIn(['json', 'pretty'])
  LOG_FORMAT: 'json' | 'pretty' = 'json';

  /**
   * How long start-up waits for PostgreSQL and Redis to answer (they may still be starting, as under Compose)
   * before it stops with a message naming the variable to fix.
   */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(600_000)
  STARTUP_TIMEOUT_MS = 30_000;

  /** Port of a worker process (APP_ROLE=worker) for /health, /health/ready and /metrics; 0: none. */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(65535)
  WORKER_PORT = 3001;

  /** Bearer token Prometheus may send to GET /metrics instead of operator basic auth. Empty: basic auth only. */
  @IsOptional()
  @Matches(/^\S{16,}$/, { message: 'METRICS_TOKEN must be at least 16 characters without spaces' })
  METRICS_TOKEN?: string = undefined;

  /**
   * On SIGTERM, /health/ready answers 503 this long before anything stops, so that a load balancer (a
   * Kubernetes Service) stops routing to the process while it still serves.
   */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  SHUTDOWN_DELAY_MS = 0;

  /** On SIGTERM, jobs under way get this long to finish; what is still running then is picked up by another worker. */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  SHUTDOWN_TIMEOUT_MS = 20_000;

  @IsOptional()
  @IsString()
  BOOTSTRAP_ADMIN_KEY?: string = undefined;

  @Matches(/^[a-z][a-z0-9]{1,15}$/, { message: 'KEY_PREFIX must be 2-16 lower-case letters or digits' })
  KEY_PREFIX = 'svc';

  /** Proxies whose X-Forwarded-For is believed: Express "trust proxy" syntax (false, a hop count, or addresses/CIDRs). */
  @IsString()
  TRUST_PROXY = 'false';

  @IsIn(['free', 'pro', 'enterprise'])
  DEFAULT_ACCOUNT_TIER: 'free' | 'pro' | 'enterprise' = 'free';

  @Transform(toBoolean)
  @IsBoolean()
  RATE_LIMIT_ENABLED = true;

  /** Enforce the plan quotas and global_limits (D-13); usage is recorded either way. */
  @Transform(toBoolean)
  @IsBoolean()
  QUOTAS_ENABLED = true;

  /** How long a quota counter in Redis is trusted before it is read again from PostgreSQL's usage rows. */
  @Transform(toInt)
  @IsInt()
  @Min(1000)
  @Max(86_400_000)
  QUOTA_SYNC_INTERVAL_MS = 300_000;

  /** A JSON or YAML file of billing plans replacing the built-in catalog (D-32). */
  @IsOptional()
  @IsString()
  BILLING_PLANS_FILE?: string = undefined;

  /** How long the limiter waits for Redis before counting in process instead. */
  @Transform(toInt)
  @IsInt()
  @Min(10)
  @Max(60000)
  RATE_LIMIT_REDIS_TIMEOUT_MS = 500;

  /**
   * While Redis is unreachable each process enforces this share of every limit on its own (set it to
   * 1 / the number of API processes): counters start from zero and no process sees another's.
   */
  @Transform(toInt)
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(0.01)
  @Max(1)
  RATE_LIMIT_FALLBACK_SHARE = 0.5;

  /**
   * Posts a client IP may make a minute to the form routes without a credential, all forms together, counted
   * before the body is read; each form's own per-IP limit still applies once the form is known.
   */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  RATE_LIMIT_FORM_POSTS_PER_MINUTE = 120;

  /** Requests a client IP may make a minute to the tracking links (/t/…, /u/…): generous, a mail client fetches a message's images at once. */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  RATE_LIMIT_TRACKING_PER_MINUTE = 600;

  /**
   * The largest request body in bytes, but for calls with a valid API key and form uploads: form posts, provider
   * events, tracking links, and any request without a key. Larger is 413, before the body is read.
   */
  @Transform(toInt)
  @IsInt()
  @Min(1024)
  BODY_LIMIT_BYTES = 1_048_576;

  /** The largest body of a call with a valid API key, in bytes (attachments travel base64 in /email/send and batch bodies). */
  @Transform(toInt)
  @IsInt()
  @Min(1024)
  API_BODY_LIMIT_BYTES = 41_943_040;

  /**
   * Bytes of request bodies one process reads at once, all requests together (a body without Content-Length, or
   * compressed, counts as its route's limit). A request that would pass it is answered 503 with Retry-After,
   * unread. Keep it at least API_BODY_LIMIT_BYTES.
   */
  @Transform(toInt)
  @IsInt()
  @Min(1024)
  BODY_BYTES_IN_FLIGHT = 134_217_728;

  /** Where form uploads are written while their request runs (removed when it ends); unset: the system's temporary directory. */
  @IsOptional()
  @IsString()
  UPLOAD_DIR?: string = undefined;

  /**
   * Key that encrypts secrets at rest (DKIM private keys, webhook secrets) and from which the keys of the MACs in
   * mail we send (tracking and unsubscribe links, return paths, SRS addresses) are derived: 32 bytes as 64 hex
   * characters or base64.
   */
  @IsOptional()
  @Matches(new RegExp(`^${ENCRYPTION_KEY_SHAPE}$`), { message: 'ENCRYPTION_KEY must be 32 bytes as 64 hex characters or base64' })
  ENCRYPTION_KEY?: string = undefined;

  /**
   * Keys ENCRYPTION_KEY replaced, while a rotation is under way: comma-separated, each like ENCRYPTION_KEY. Secrets
   * sealed under one of them still open (`reseal-secrets` re-seals them under ENCRYPTION_KEY), and links, return paths,
   * SRS addresses and form challenges made under one still verify. Nothing new is sealed or MACed with them.
   */
  @IsOptional()
  @Matches(new RegExp(`^\\s*${ENCRYPTION_KEY_SHAPE}(\\s*,\\s*${ENCRYPTION_KEY_SHAPE})*\\s*$`), {
    message: 'ENCRYPTION_KEY_PREVIOUS must be a comma-separated list of keys, each 32 bytes as 64 hex characters or base64',
  })
  ENCRYPTION_KEY_PREVIOUS?: string = undefined;
}

/** The names of every variable Mailroom reads (the README's configuration table lists the same). */
export const ENV_KEYS = Object.keys(new EnvSchema()) as (keyof EnvSchema)[];

/**
 * LOG_LEVEL and LOG_FORMAT alone, each at its default when unset or bad: the logger that reports a bad
 * configuration needs them before the whole configuration is known to be good.
 */
export function logSettingsOf(raw: Record<string, string | undefined>): LogSettings {
  const defaults = new EnvSchema();
  const level = LOG_LEVELS.includes(raw.LOG_LEVEL ?? '') ? raw.LOG_LEVEL! : defaults.LOG_LEVEL;
  return { level, format: raw.LOG_FORMAT === 'pretty' ? 'pretty' : defaults.LOG_FORMAT };
}

/** A bad environment: one line per variable, each naming it and (unless it is a secret) the value given. */
export class ConfigurationError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((line) => `  ${line}`).join('\n')}`);
  }
}

/** Variables whose values are never repeated in a message (KEY_PREFIX is no secret; ENCRYPTION_KEY_PREVIOUS is). */
const SECRET_NAME = /(KEY|SECRET|TOKEN|PASSWORD)(_PREVIOUS)?$/;
/** Constraints that say what kind of value is wanted: when one fails, the others (ranges) say nothing more. */
const TYPE_CONSTRAINTS = ['isInt', 'isNumber', 'isBoolean', 'isIn', 'isUrl', 'matches', 'isString'];

/** A URL as a message may show it: its password masked (any other text is left as it is). */
export function maskedUrl(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/@\s]*:)[^@/\s]+@/i, '$1***@');
}

/** The value as a message may show it, a URL's password masked; null for a secret, which is never shown. */
export function shownValue(name: string, value: unknown): string | null {
  // Environment values are strings; an unset one has nothing to show.
  if (SECRET_NAME.test(name) || typeof value !== 'string') return null;
  const masked = maskedUrl(value);
  return JSON.stringify(masked.length > 200 ? `${masked.slice(0, 200)}…` : masked);
}

export function validateEnv(raw: Record<string, string | undefined>): EnvSchema {
  // Only our own variables count, and an empty one means "use the default".
  const own = Object.fromEntries(ENV_KEYS.filter((key) => raw[key] !== undefined && raw[key] !== '').map((key) => [key, raw[key]]));
  const env = plainToInstance(EnvSchema, own, { exposeDefaultValues: true });
  const problems = validateSync(env).map((error) => {
    const failed = Object.entries(error.constraints ?? {});
    const typeFailure = failed.find(([name]) => TYPE_CONSTRAINTS.includes(name));
    const messages = typeFailure ? [typeFailure[1]] : failed.map(([, message]) => message);
    const shown = shownValue(error.property, own[error.property]);
    return `${messages.join('; ')}${shown === null ? '' : ` (got ${shown})`}`;
  });
  const adminKeyShape = new RegExp(`^${env.KEY_PREFIX}_sk_admin_[0-9a-f]{64}$`);
  if (env.BOOTSTRAP_ADMIN_KEY && !adminKeyShape.test(env.BOOTSTRAP_ADMIN_KEY)) {
    problems.push(`BOOTSTRAP_ADMIN_KEY must be an admin key shaped ${env.KEY_PREFIX}_sk_admin_<64 hex characters>`);
  }
  if (problems.length > 0) throw new ConfigurationError(problems);
  return env;
}
