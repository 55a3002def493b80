import { Logger } from '@nestjs/common';
import type { AppConfigService } from '../config/app-config.service';
import { JobName } from '../queue/queue.constants';
import type { AttemptOutcome, WebhookDeliveryService } from './webhook-delivery.service';
import type { AcquireRequest, Grant, WebhookEndpointGate } from './webhook-endpoint-gate';
import type { EndpointLimits } from './webhook-endpoint-limits';
import type { WebhookEndpoints } from './webhook-endpoints';
import { WebhookRetrySchedule } from './webhook-retry-schedule';
import { FOLLOW_MAX_ATTEMPTS, FOLLOW_MAX_MS, verdictOf, WebhookProcessor } from './webhook.processor';
import type { DeliverWebhookJob, WebhookQueue } from './webhook.queue';

const LIMITS: EndpointLimits = { maxConcurrency: 4, rateLimitPerSecond: null };
const OK: AttemptOutcome = { statusCode: 200, error: null, response: null, succeeded: true };
const none: Grant = { run: null, waitMs: 0, spare: 0, opened: false };
const grant = (run: DeliverWebhookJob, extra: Partial<Grant> = {}): Grant => ({ ...none, run, ...extra });

/** A worker with its Redis gate, database reads and attempts replaced by scripted answers. */
function worker(options: {
  acquire: (request: AcquireRequest) => Promise<Grant>;
  attempt?: (deliveryId: string, attempt: number) => Promise<AttemptOutcome | null>;
  limitsOf?: () => Promise<EndpointLimits | null>;
}) {
  const requests: AcquireRequest[] = [];
  const wakes: { count?: number; delayMs?: number }[] = [];
  const attempt = jest.fn(options.attempt ?? (() => Promise.resolve(OK)));
  const gate = {
    acquire: (_endpoint: string, _limits: EndpointLimits, request: AcquireRequest) => {
      requests.push(request);
      return options.acquire(request);
    },
    pause: () => Promise.resolve(),
    forget: () => Promise.resolve(),
  } as unknown as WebhookEndpointGate;
  const endpoints = {
    ofAttempt: () => Promise.resolve({ webhookId: 'whk_1', limits: LIMITS }),
    limitsOf: options.limitsOf ?? (() => Promise.resolve(LIMITS)),
  } as unknown as WebhookEndpoints;
  const webhookQueue = {
    retrySchedule: WebhookRetrySchedule.parse('5s'),
    wake: (_ids: string[], wake: { count?: number; delayMs?: number }) => {
      wakes.push(wake);
      return Promise.resolve();
    },
  } as unknown as WebhookQueue;
  const config = { env: { WEBHOOK_WORKER_CONCURRENCY: 4 } } as unknown as AppConfigService;
  const processor = new WebhookProcessor(
    {} as never,
    { attempt } as unknown as WebhookDeliveryService,
    endpoints,
    gate,
    webhookQueue,
    config,
  );
  const deliver = (job: DeliverWebhookJob) => processor.handle({ name: JobName.DeliverWebhook, data: job });
  return { deliver, requests, wakes, attempt };
}

const first: DeliverWebhookJob = { deliveryId: 'whd_1', attempt: 1 };

describe('WebhookProcessor', () => {
  beforeAll(() => Logger.overrideLogger(false));
  afterEach(() => jest.restoreAllMocks());

  it('gives the slot back and reports the error when an attempt fails unexpectedly', async () => {
    const { deliver, requests, wakes } = worker({
      acquire: (request) => Promise.resolve(request.queued ? grant(first) : { ...none, spare: 1 }),
      attempt: () => Promise.reject(new Error('database gone')),
    });
    await expect(deliver(first)).rejects.toThrow('database gone');
    expect(requests.at(-1)).toEqual({ released: first, take: false });
    expect(wakes).toEqual([{ count: 1, fanOut: false }]);
  });

  it('gives the slot back with the limits it had when reading them again fails', async () => {
    const { deliver, requests } = worker({
      acquire: (request) => Promise.resolve(request.queued ? grant(first) : none),
      limitsOf: () => Promise.reject(new Error('database gone')),
    });
    await expect(deliver(first)).resolves.toBe('made 1 attempt');
    expect(requests.at(-1)).toEqual({ released: first, verdict: 'ok', take: true });
  });

  it('reports the attempt’s error, not the one of giving the slot back', async () => {
    const { deliver, requests } = worker({
      acquire: (request) => (request.queued ? Promise.resolve(grant(first)) : Promise.reject(new Error('Redis gone'))),
      attempt: () => Promise.reject(new Error('database gone')),
    });
    await expect(deliver(first)).rejects.toThrow('database gone');
    expect(requests.at(-1)).toEqual({ released: first, take: false });
  });

  it('tries to give the slot back when handing it on fails', async () => {
    const { deliver, requests } = worker({
      acquire: (request) => (request.queued ? Promise.resolve(grant(first)) : Promise.reject(new Error('Redis gone'))),
    });
    await expect(deliver(first)).rejects.toThrow('Redis gone');
    expect(requests.slice(1)).toEqual([
      { released: first, verdict: 'ok', take: true },
      { released: first, take: false },
    ]);
  });

  it(`hands the slot on after ${FOLLOW_MAX_ATTEMPTS} attempts, through a wake at the back of the queue`, async () => {
    let next = 1;
    const { deliver, requests, wakes, attempt } = worker({
      // An endless queue (a worker that never hands on would stop at 100).
      acquire: (request) =>
        Promise.resolve(request.take && next <= 100 ? grant({ deliveryId: `whd_${next++}`, attempt: 1 }) : { ...none, spare: 2 }),
    });
    await expect(deliver(first)).resolves.toBe(`made ${FOLLOW_MAX_ATTEMPTS} attempts`);
    expect(attempt).toHaveBeenCalledTimes(FOLLOW_MAX_ATTEMPTS);
    expect(requests.at(-1)).toMatchObject({ verdict: 'ok', take: false });
    expect(wakes).toEqual([{ count: 2, fanOut: false }]);
  });

  it(`hands the slot on once it held it ${FOLLOW_MAX_MS} ms`, async () => {
    let now = 1_000_000;
    jest.spyOn(Date, 'now').mockImplementation(() => now);
    let next = 1;
    const { deliver, requests, wakes } = worker({
      acquire: (request) =>
        Promise.resolve(request.take && next <= 100 ? grant({ deliveryId: `whd_${next++}`, attempt: 1 }) : { ...none, spare: 1 }),
      attempt: () => {
        now += FOLLOW_MAX_MS / 2 + 1;
        return Promise.resolve({ ...OK, succeeded: false, statusCode: 500 });
      },
    });
    await expect(deliver(first)).resolves.toBe('made 2 attempts');
    expect(requests.slice(1).map((r) => [r.verdict, r.take])).toEqual([
      ['failed', true],
      ['failed', false],
    ]);
    expect(wakes).toEqual([{ count: 1, fanOut: false }]);
  });

  it('wakes workers for the slots a success gave back to the endpoint', async () => {
    const { deliver, wakes } = worker({
      acquire: (request) => Promise.resolve(request.queued ? grant(first) : { ...none, spare: 3, opened: true }),
    });
    await expect(deliver(first)).resolves.toBe('made 1 attempt');
    expect(wakes).toEqual([{ count: 3, fanOut: false }]);
  });

  it('judges the endpoint by what it answered, not by failures of Mailroom’s own', () => {
    expect(verdictOf(OK)).toBe('ok');
    expect(verdictOf({ ...OK, succeeded: false, statusCode: 503 })).toBe('failed');
    expect(
      verdictOf({ statusCode: null, error: 'the signing secret could not be opened', response: null, succeeded: false, blameless: true }),
    ).toBeNull();
    expect(verdictOf(null)).toBeNull();
  });
});
