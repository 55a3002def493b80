import { Transform } from 'class-transformer';
import { IsBoolean, IsIn, IsInt, IsOptional, IsString, IsUrl, Matches, Max, Min, ValidateIf } from 'class-validator';

/** A variable as the environment gives it, or the schema's own default. */
type EnvValue = string | number | boolean | undefined;
export const toBoolean = ({ value }: { value: EnvValue }) =>
  value === undefined || value === '' ? undefined : ['true', '1', 'yes'].includes(String(value).toLowerCase());
export const toInt = ({ value }: { value: EnvValue }) => (value === undefined || value === '' ? undefined : Number(value));
/** `host:port`, `[v6 address]:port` or an absolute path (a Unix socket): where a content scanner listens. */
const SCANNER_ADDRESS = /^(\/\S+|[A-Za-z0-9.-]+:\d{1,5}|\[[0-9A-Fa-f:.]+\]:\d{1,5})$/;

/**
 * The variables of the mail pipelines, with their defaults: delivery to the provider, retention, domain verification,
 * webhooks, list sends, inbound SMTP and the checks of form posts. EnvSchema adds the process's own.
 */
export class MailEnvSchema {
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

  /** Resolvers for domain verification and inbound mail's SPF/DKIM/DMARC/ARC, as host:port[,host:port]; empty: the system's. */
  @IsOptional()
  @Matches(/^[^,\s]+(,[^,\s]+)*$/, { message: 'DNS_SERVERS must be a comma-separated host:port list' })
  DNS_SERVERS?: string = undefined;

  @IsIn(['dns', 'skip'])
  DOMAIN_VERIFICATION: 'dns' | 'skip' = 'dns';

  /**
   * Time-out of one DNS query, in ms. Domain verification tries a query twice (the second wait doubled); inbound
   * mail's authentication tries each once, and all of one message's lookups get five of these in all.
   */
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

  /**
   * Time-out of one webhook delivery attempt (connect, send and answer), in ms: 15 s as Svix, within the 15–30 s
   * the Standard Webhooks recommendations suggest.
   */
  @Transform(toInt)
  @IsInt()
  @Min(100)
  @Max(120_000)
  WEBHOOK_TIMEOUT_MS = 15_000;

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
   * A webhook whose attempts have all failed for this long (since its last success) is disabled, its account
   * told by a `webhook.disabled` event and an email; in ms, 5 days by default. 0: only a 410 Gone disables one.
   */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(90 * 24 * 3_600_000)
  WEBHOOK_DISABLE_AFTER_FAILING_MS = 5 * 24 * 3_600_000;

  /** Largest webhook body sent; a bigger event goes as a thin one, with the URL of its full body. */
  @Transform(toInt)
  @IsInt()
  @Min(1024)
  @Max(64 * 1024 * 1024)
  WEBHOOK_MAX_PAYLOAD_BYTES = 256 * 1024;

  /**
   * Secret of `POST /provider/events` (D-24): the provider signs with the Standard Webhooks headers, the
   * UTF-8 bytes of this value being the HMAC key. Unset: the endpoint refuses every call (401).
   */
  @IsOptional()
  @IsString()
  PROVIDER_WEBHOOK_SECRET?: string = undefined;

  /**
   * Soft bounces (a provider's transient bounce, a full mailbox (5.2.x), a DSN failing with a 4.x.x or 5.2.x Status) of one address within
   * SOFT_BOUNCE_WINDOW_DAYS that put it on the account's suppression list (D-39); a delivery to it starts the
   * count again. 0: soft bounces never suppress.
   */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(1000)
  SOFT_BOUNCE_SUPPRESS_COUNT = 5;

  /** The window SOFT_BOUNCE_SUPPRESS_COUNT counts in, in days. */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(365)
  SOFT_BOUNCE_WINDOW_DAYS = 30;

  /** Subscribers a list-send job turns into messages per step (one statement each). */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(5000)
  LIST_SEND_BATCH_SIZE = 500;

  /** Runs of a list send's fan-out, over every job it has, before the send is `failed`. */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(100)
  LIST_SEND_MAX_ATTEMPTS = 10;

  /** Delay before a failed list-send fan-out runs again, in ms; it doubles at each failure (1 s, 3 s, 7 s, …). */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(3_600_000)
  LIST_SEND_RETRY_FIRST_DELAY_MS = 1000;

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

  /**
   * PEM files of the inbound server's certificate and key for STARTTLS. Without them it presents a self-signed
   * certificate made at first start for INBOUND_SMTP_HOSTNAME (kept in PostgreSQL, the same for every worker).
   */
  @ValidateIf((env: MailEnvSchema) => env.INBOUND_SMTP_TLS_CERT !== undefined || env.INBOUND_SMTP_TLS_KEY !== undefined)
  @IsString({ message: 'INBOUND_SMTP_TLS_CERT and INBOUND_SMTP_TLS_KEY go together: set both or neither' })
  INBOUND_SMTP_TLS_CERT?: string = undefined;

  @ValidateIf((env: MailEnvSchema) => env.INBOUND_SMTP_TLS_CERT !== undefined || env.INBOUND_SMTP_TLS_KEY !== undefined)
  @IsString({ message: 'INBOUND_SMTP_TLS_CERT and INBOUND_SMTP_TLS_KEY go together: set both or neither' })
  INBOUND_SMTP_TLS_KEY?: string = undefined;

  /** The inbound server offers STARTTLS (opportunistic TLS, as MX servers do). false: plain text only. */
  @Transform(toBoolean)
  @IsBoolean()
  INBOUND_SMTP_STARTTLS = true;

  /**
   * Messages one sender (envelope sender and client network) may send to one forwarding domain an hour; past it
   * RCPT TO is answered 451 4.7.1. Bounces (null sender) are not counted. 0: no limit.
   */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  INBOUND_SMTP_MAX_MESSAGES_PER_SENDER_PER_HOUR = 100;

  /** Messages one forwarding domain may receive an hour, from all senders; past it RCPT TO is answered 451 4.7.1. 0: no limit. */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  INBOUND_SMTP_MAX_MESSAGES_PER_DOMAIN_PER_HOUR = 1000;

  /**
   * SpamAssassin's spamd, as `host:port` or the path of its Unix socket: every message to be forwarded is checked
   * at DATA and refused (554 5.7.1) at its domain's spam threshold. Empty: no spam check.
   */
  @IsOptional()
  @Matches(SCANNER_ADDRESS, { message: 'INBOUND_SPAMD_ADDRESS must be host:port or the path of a Unix socket' })
  INBOUND_SPAMD_ADDRESS?: string = undefined;

  /** How long spamd may take over one message; past it (or when it cannot be reached) the message gets 451 4.3.0. */
  @Transform(toInt)
  @IsInt()
  @Min(100)
  @Max(600_000)
  INBOUND_SPAMD_TIMEOUT_MS = 30_000;

  /**
   * spamd is given at most this much of a message: its header section and the start and end of its body (as spamc's
   * --max-size, but cut rather than skipped).
   */
  @Transform(toInt)
  @IsInt()
  @Min(16 * 1024)
  @Max(100 * 1024 * 1024)
  INBOUND_SPAMD_MAX_BYTES = 512 * 1024;

  /**
   * ClamAV's clamd, as `host:port` or the path of its Unix socket: every message to be forwarded is scanned at DATA
   * and refused (554 5.7.1) when a virus is found. Empty: no virus scan.
   */
  @IsOptional()
  @Matches(SCANNER_ADDRESS, { message: 'INBOUND_CLAMD_ADDRESS must be host:port or the path of a Unix socket' })
  INBOUND_CLAMD_ADDRESS?: string = undefined;

  /** How long clamd may take over one message; past it (or when it cannot be reached) the message gets 451 4.3.0. */
  @Transform(toInt)
  @IsInt()
  @Min(100)
  @Max(600_000)
  INBOUND_CLAMD_TIMEOUT_MS = 60_000;

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
