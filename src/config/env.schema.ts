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
import type { LogSettings } from '../common/logging/root-logger';
import { redisUrlProblem } from '../redis/redis-url';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
/** An encryption key: 32 bytes as 64 hex characters or base64. */
const ENCRYPTION_KEY_SHAPE = '([0-9a-fA-F]{64}|[A-Za-z0-9+/]{43}=?)';

/** A variable as the environment gives it, or the schema's own default. */
type EnvValue = string | number | boolean | undefined;
const toBoolean = ({ value }: { value: EnvValue }) =>
  value === undefined || value === '' ? undefined : ['true', '1', 'yes'].includes(String(value).toLowerCase());
const toInt = ({ value }: { value: EnvValue }) => (value === undefined || value === '' ? undefined : Number(value));

/**
 * Every environment variable Mailroom reads, with its default (D-35). Nothing outside src/config reads
 * process.env; a bad value stops start-up with a message naming the variable.
 */
export class EnvSchema {
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

  @IsOptional()
  @Matches(/^smtps?:\/\//, { message: 'SMTP_URL must be an smtp:// or smtps:// URL' })
  SMTP_URL?: string = undefined;

  /** Recipients per second handed to the provider, by all workers together (providers count recipients). */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  SMTP_MAX_RATE = 200;

  /** SMTP connections to the provider one process may hold, all its worker threads together (shared out as DATABASE_POOL_SIZE). */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(1000)
  SMTP_POOL_SIZE = 10;

  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(1000)
  EMAIL_WORKER_CONCURRENCY = 20;

  /**
   * Bytes of messages one worker thread holds for delivery at once (each message's stored content, or a forwarded
   * message's received bytes; attachments are streamed and not counted): past it, the next delivery waits for one
   * to finish. A message larger than this is sent alone.
   */
  @Transform(toInt)
  @IsInt()
  @Min(1024 * 1024)
  DELIVERY_BATCH_BYTES = 64 * 1024 * 1024;

  /**
   * How long a worker's hold on a job lasts without renewal (ms); a job whose worker died (its hold lapsed)
   * is run again by another worker within about twice this.
   */
  @Transform(toInt)
  @IsInt()
  @Min(500)
  QUEUE_LOCK_MS = 30_000;

  @IsString()
  OUTBOX_DIR = 'data/outbox';

  /**
   * First retry delay of a deferred email in ms. The whole D-20 schedule (10 s, 30 s, 2 min, 10 min, 30 min,
   * then hourly up to 24 h) scales with it; tests shorten it.
   */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  EMAIL_RETRY_FIRST_DELAY_MS = 10_000;

  /** How often the sweeper looks for accepted emails that have no queue job (D-16), in ms. */
  @Transform(toInt)
  @IsInt()
  @Min(100)
  EMAIL_SWEEP_INTERVAL_MS = 30_000;

  /** An accepted email counts as lost by the queue once it has waited this long (ms) without a job. */
  @Transform(toInt)
  @IsInt()
  @Min(100)
  EMAIL_SWEEP_AFTER_MS = 60_000;

  /**
   * Days a message keeps its body (text, HTML, custom headers, attachments) after its last status move to a
   * final one (sent, delivered, bounced, failed, cancelled); its status, events and envelope stay. 0: forever.
   */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(36_500)
  RETENTION_MESSAGE_CONTENT_DAYS = 30;

  /** Days a received message keeps its raw bytes once every message forwarding it is final. 0: forever. */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(36_500)
  RETENTION_INBOUND_MESSAGES_DAYS = 7;

  /** Days a published webhook event stays in the outbox (its deliveries keep their own copy). 0: forever. */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(36_500)
  RETENTION_OUTBOX_EVENTS_DAYS = 7;

  /** Days a finished webhook delivery (succeeded or failed) and its attempts stay in the delivery log. 0: forever. */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(36_500)
  RETENTION_WEBHOOK_DELIVERIES_DAYS = 30;

  /** How often one worker instance sweeps what the RETENTION_*_DAYS settings let go, in ms. */
  @Transform(toInt)
  @IsInt()
  @Min(100)
  RETENTION_SWEEP_INTERVAL_MS = 600_000;

  /** Rows one retention statement removes or clears at most (each batch is its own short transaction). */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(10_000)
  RETENTION_BATCH_SIZE = 500;

  /** Resolvers for domain verification, as host:port[,host:port]; empty means the system's. */
  @IsOptional()
  @Matches(/^[^,\s]+(,[^,\s]+)*$/, { message: 'DNS_SERVERS must be a comma-separated host:port list' })
  DNS_SERVERS?: string = undefined;

  @IsIn(['dns', 'skip'])
  DOMAIN_VERIFICATION: 'dns' | 'skip' = 'dns';

  /** Time-out of one DNS query in domain verification, in ms; a query is tried twice (the second wait is doubled). */
  @Transform(toInt)
  @IsInt()
  @Min(100)
  @Max(30000)
  DNS_TIMEOUT_MS = 2000;

  /**
   * Host name for the SPF hint shown with each domain: `v=spf1 include:<this> ~all` (your SMTP provider's
   * SPF domain). Empty: `v=spf1 a:<PUBLIC_URL host> ~all`.
   */
  @IsOptional()
  @Matches(/^[A-Za-z0-9.-]+$/, { message: 'DOMAIN_SPF_INCLUDE must be a host name' })
  DOMAIN_SPF_INCLUDE?: string = undefined;

  /** Let webhook URLs reach loopback, private, link-local and metadata addresses (D-23): for local receivers only. */
  @Transform(toBoolean)
  @IsBoolean()
  WEBHOOK_ALLOW_PRIVATE_NETWORKS = false;

  /**
   * Waits before each retry of a failed webhook delivery (D-23), comma-separated durations (`500ms`, `5s`,
   * `5m`, `2h`); one attempt more than the list is long is made in all, then the delivery is failed.
   */
  @Matches(/^\d+(ms|s|m|h)(,\d+(ms|s|m|h))*$/, { message: 'WEBHOOK_RETRY_SCHEDULE must be durations like 5s,5m,30m,2h' })
  WEBHOOK_RETRY_SCHEDULE = '5s,5m,30m,2h,5h,10h,10h';

  /** Time-out of one webhook delivery attempt (connect, send and answer), in ms. */
  @Transform(toInt)
  @IsInt()
  @Min(100)
  @Max(120_000)
  WEBHOOK_TIMEOUT_MS = 10_000;

  /** Webhook deliveries one worker process makes at once. */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(1000)
  WEBHOOK_WORKER_CONCURRENCY = 50;

  /** How often workers look for new events to deliver to webhooks, in ms. */
  @Transform(toInt)
  @IsInt()
  @Min(10)
  @Max(60_000)
  WEBHOOK_POLL_INTERVAL_MS = 1000;

  /**
   * Secret of `POST /provider/events` (D-24): the provider signs with the Standard Webhooks headers, the
   * UTF-8 bytes of this value being the HMAC key. Unset: the endpoint refuses every call (401).
   */
  @IsOptional()
  @IsString()
  PROVIDER_WEBHOOK_SECRET?: string = undefined;

  /** Subscribers a list-send job turns into messages per step (one statement each). */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(5000)
  LIST_SEND_BATCH_SIZE = 500;

  /**
   * Opens of one message by one client (address, or IPv6 /64, and user agent) within this many ms count once: no
   * event, no webhook for the repeats. 0: every open counts.
   */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(86_400_000)
  TRACKING_REPEAT_OPEN_WINDOW_MS = 60_000;

  /** Port of the inbound SMTP server (forwarding, bounces; D-31), run by workers. 0: no inbound server. */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(65535)
  INBOUND_SMTP_PORT = 2525;

  /** Address the inbound SMTP server listens on. */
  @IsString()
  INBOUND_SMTP_HOST = '0.0.0.0';

  /** The name the inbound server gives in its greeting and in the Received header it adds. Empty: the machine's host name. */
  @IsOptional()
  @Matches(/^[A-Za-z0-9.-]{1,253}$/, { message: 'INBOUND_SMTP_HOSTNAME must be a host name' })
  INBOUND_SMTP_HOSTNAME?: string = undefined;

  /** Largest message the inbound server takes (bigger: 552 at DATA). */
  @Transform(toInt)
  @IsInt()
  @Min(1024)
  @Max(100 * 1024 * 1024)
  INBOUND_SMTP_MAX_MESSAGE_BYTES = 25 * 1024 * 1024;

  /** An inbound connection silent this long (waiting for a command or for data) is closed. */
  @Transform(toInt)
  @IsInt()
  @Min(1000)
  INBOUND_SMTP_TIMEOUT_MS = 60_000;

  /** Inbound connections one client address may hold open at once; more get 421. */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  INBOUND_SMTP_MAX_CONNECTIONS_PER_IP = 20;

  /** Inbound connections the server holds open at once, from all clients; more get 421. */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  INBOUND_SMTP_MAX_CONNECTIONS = 100;

  /** Directory where inbound messages over 256 KB are kept while they arrive. Empty: the system's temporary directory. */
  @IsOptional()
  @IsString()
  INBOUND_SMTP_SPOOL_DIR?: string = undefined;

  /** PEM files of the inbound server's certificate and key: with both, it offers STARTTLS. */
  @IsOptional()
  @IsString()
  INBOUND_SMTP_TLS_CERT?: string = undefined;

  @IsOptional()
  @IsString()
  INBOUND_SMTP_TLS_KEY?: string = undefined;

  /**
   * Domain of the VERP return path of every outgoing message (`bounces+<token>@<domain>`): its MX must point
   * at the inbound server, which takes the bounces sent there. Empty: the PUBLIC_URL host.
   */
  @IsOptional()
  @Matches(/^[A-Za-z0-9.-]{1,253}$/, { message: 'RETURN_PATH_DOMAIN must be a domain name' })
  RETURN_PATH_DOMAIN?: string = undefined;

  /**
   * Sender of the emails Mailroom writes itself for forms without a domain of their own (stand-alone,
   * collection and instant forms, confirmations): `address` or `Name <address>`. Empty: forms@<PUBLIC_URL host>.
   * Signed with the DKIM key of the verified domain of that name, else sent unsigned.
   */
  @IsOptional()
  @Matches(/^([^<>\r\n]*<[^<>@\s]+@[^<>@\s]+\.[^<>@\s]+>|[^<>@\s]+@[^<>@\s]+\.[^<>@\s]+)$/, {
    message: 'FORMS_FROM must be an address (forms@example.com) or Name <forms@example.com>',
  })
  FORMS_FROM?: string = undefined;

  /** Where Cloudflare Turnstile tokens of form posts are verified. */
  @IsUrl({ require_tld: false, require_protocol: true })
  TURNSTILE_VERIFY_URL = 'https://challenges.cloudflare.com/turnstile/v0/siteverify';

  /** Where hCaptcha tokens of form posts are verified. */
  @IsUrl({ require_tld: false, require_protocol: true })
  HCAPTCHA_VERIFY_URL = 'https://api.hcaptcha.com/siteverify';
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
  if (SECRET_NAME.test(name)) return null;
  const masked = maskedUrl(String(value));
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
