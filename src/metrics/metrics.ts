import { isMainThread, workerData } from 'node:worker_threads';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { onSweptRows } from '../common/expired-rows';

/**
 * Every metric Mailroom exports, in one registry per process (Prometheus scrapes each process; counters add
 * up across them) and per worker thread (the main thread's /metrics adds them up). Labels take bounded values
 * only: route patterns, queue names, statuses, outcomes, scopes.
 */
export const registry = new Registry();
// The process_* and nodejs_* figures are the process's: a worker thread's would count the same process again.
if (isMainThread) collectDefaultMetrics({ register: registry });

export const httpRequestDuration = new Histogram({
  name: 'mailroom_http_request_duration_seconds',
  help: 'HTTP requests by method, route pattern and status code',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [registry],
});

/** Filled at scrape time from Redis (see QueueMetrics): the same numbers on every process. */
export const queueJobs = new Gauge({
  name: 'mailroom_queue_jobs',
  help: 'Jobs per queue and state (waiting, active, delayed, failed), as Redis holds them',
  labelNames: ['queue', 'state'] as const,
  registers: [registry],
});

export const jobDuration = new Histogram({
  name: 'mailroom_job_duration_seconds',
  help: 'Queue jobs run by this process, by queue and outcome (completed, failed)',
  labelNames: ['queue', 'outcome'] as const,
  buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
  registers: [registry],
});

export const emails = new Counter({
  name: 'mailroom_emails_total',
  help: 'Messages that entered each status (queued, scheduled, sent, delivered, deferred, bounced, failed, …) in this process',
  labelNames: ['status'] as const,
  registers: [registry],
});

export const webhookAttempts = new Counter({
  name: 'mailroom_webhook_attempts_total',
  help: 'Webhook delivery attempts by outcome: succeeded, retrying (failed, another attempt is scheduled), failed (given up)',
  labelNames: ['outcome'] as const,
  registers: [registry],
});

export const rateLimitRejections = new Counter({
  name: 'mailroom_rate_limit_rejections_total',
  help: 'Requests refused with 429 by the rate limiter, by the scope of the limit that refused them',
  labelNames: ['scope'] as const,
  registers: [registry],
});

export const requestBodyBytesInFlight = new Gauge({
  name: 'mailroom_http_body_bytes_in_flight',
  help: 'Bytes of request bodies being read now, as the body gate reserves them (capped by BODY_BYTES_IN_FLIGHT)',
  registers: [registry],
});

export const requestBodyRefusals = new Counter({
  name: 'mailroom_http_body_refusals_total',
  help: 'Request bodies refused by the body gate: too_large (413, announced or cut while arriving), busy (503, no room to read it)',
  labelNames: ['reason'] as const,
  registers: [registry],
});

export const inboundSmtpSessions = new Counter({
  name: 'mailroom_inbound_smtp_sessions_total',
  help: 'Inbound SMTP connections, by whether they were accepted or refused at connect',
  labelNames: ['result'] as const,
  registers: [registry],
});

export const inboundSmtpSessionsActive = new Gauge({
  name: 'mailroom_inbound_smtp_sessions_active',
  help: 'Inbound SMTP sessions open now',
  registers: [registry],
});

export const inboundContentScans = new Counter({
  name: 'mailroom_inbound_content_scans_total',
  help:
    'Messages to be forwarded, by what their content check found: clean, spam, virus, attachment (a program or disk image), ' +
    'unreadable (its attachments could not be parsed; all 554), unavailable (a scanner did not answer: 451)',
  labelNames: ['result'] as const,
  registers: [registry],
});

/** The thread whose pools the connection metrics describe: `main`, or `worker-<slot>` (WorkerSupervisor's slots). */
const THREAD = isMainThread ? 'main' : `worker-${(workerData as { slot?: number } | null)?.slot ?? 0}`;

/** A connection pool of this thread as /metrics reads it at scrape time. */
export interface PoolReading {
  /** Connections busy with a query, or sending a message. */
  inUse: number;
  /** Open connections waiting for work (unknown for the SMTP pool). */
  idle?: number;
  /** Queries or messages waiting for a connection. */
  waiting: number;
  /** The most this pool may open: the thread's share of the process's budget. */
  max: number;
}

const poolReaders = new Map<'database' | 'smtp', () => PoolReading>();

/** Lets /metrics read one of this thread's pools: the module that makes the pool calls it. */
export function observePool(kind: 'database' | 'smtp', read: () => PoolReading): void {
  poolReaders.set(kind, read);
}

/** A gauge per thread, of `field` of the pool `kind`, read at scrape time; no series for a thread without that pool. */
function poolGauge(name: string, help: string, kind: 'database' | 'smtp', field: 'waiting' | 'max' | 'inUse'): Gauge<'thread'> {
  return new Gauge({
    name,
    help,
    labelNames: ['thread'] as const,
    registers: [registry],
    collect() {
      const reading = poolReaders.get(kind)?.();
      if (reading) this.set({ thread: THREAD }, reading[field]);
    },
  });
}

export const databaseConnections = new Gauge({
  name: 'mailroom_db_connections',
  help: 'PostgreSQL connections (DATABASE_URL) open in each thread’s pool, by state: in_use, idle',
  labelNames: ['state', 'thread'] as const,
  registers: [registry],
  collect() {
    const reading = poolReaders.get('database')?.();
    if (!reading) return;
    this.set({ state: 'in_use', thread: THREAD }, reading.inUse);
    this.set({ state: 'idle', thread: THREAD }, reading.idle ?? 0);
  },
});

export const databaseConnectionsMax = poolGauge(
  'mailroom_db_connections_max',
  'PostgreSQL connections each thread’s pool may open: its share of DATABASE_POOL_SIZE (the threads’ shares add up to it)',
  'database',
  'max',
);

export const databaseQueriesWaiting = poolGauge(
  'mailroom_db_queries_waiting',
  'Queries of each thread waiting for a free connection of its pool',
  'database',
  'waiting',
);

export const smtpConnectionsInUse = poolGauge(
  'mailroom_smtp_connections_in_use',
  'SMTP connections to the provider sending a message now, per worker thread',
  'smtp',
  'inUse',
);

export const smtpConnectionsMax = poolGauge(
  'mailroom_smtp_connections_max',
  'SMTP connections each worker thread may open to the provider: its share of SMTP_POOL_SIZE (the shares add up to it)',
  'smtp',
  'max',
);

export const smtpSendsWaiting = poolGauge(
  'mailroom_smtp_sends_waiting',
  'Messages of each worker thread waiting for a free SMTP connection',
  'smtp',
  'waiting',
);

export const retentionSwept = new Counter({
  name: 'mailroom_retention_swept_total',
  help:
    'Rows removed or cleared past their retention, by kind: message_content (bodies cleared), inbound_messages (raw bytes cleared), ' +
    'outbox_events, webhook_deliveries (with their attempts), webhook_event_bodies (whole bodies of thin events, after their last delivery), ' +
    'attachment_blobs (no message refers to them), ' +
    'idempotency_records, provider_webhook_ids (expired)',
  labelNames: ['kind'] as const,
  registers: [registry],
});
// The sweeps live in common/, which imports no feature: they report here.
onSweptRows((kind, rows) => retentionSwept.inc({ kind }, rows));
