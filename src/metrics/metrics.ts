import { isMainThread } from 'node:worker_threads';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

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
