import { Agent, request } from 'node:http';
import Bull from 'bull';
import { Webhook } from 'standardwebhooks';

/**
 * The floor a Bull-based webhook sender cannot go below, run as its own process by the webhook-deliveries
 * scenario: a bare Bull worker whose jobs each carry an event that it signs with `standardwebhooks` and POSTs
 * over keep-alive — no database, no delivery log, no address checks. Exits once `BARE_COUNT` jobs are done.
 */
async function main(): Promise<void> {
  const count = Number(process.env.BARE_COUNT);
  const concurrency = Number(process.env.BARE_CONCURRENCY);
  const target = new URL(process.env.BARE_TARGET!);
  const webhook = new Webhook(process.env.BARE_SECRET!);
  const agent = new Agent({ keepAlive: true });
  const queue = new Bull<{ id: string; payload: Record<string, unknown> }>('bare-webhooks', process.env.BARE_REDIS_URL!, {
    prefix: process.env.BARE_PREFIX,
    defaultJobOptions: { removeOnComplete: 1000, removeOnFail: 5000 },
  });
  let done = 0;
  void queue.process(concurrency, (job) => {
    const body = JSON.stringify({ id: job.data.id, ...job.data.payload });
    const timestamp = new Date();
    return new Promise<void>((resolve, reject) => {
      const req = request(
        {
          host: target.hostname,
          port: target.port,
          path: target.pathname,
          method: 'POST',
          agent,
          headers: {
            'content-type': 'application/json',
            'webhook-id': job.data.id,
            'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
            'webhook-signature': webhook.sign(job.data.id, timestamp, body),
          },
        },
        (res) => {
          res.resume();
          res.on('end', () => {
            if (++done === count) setImmediate(() => void queue.close().then(() => process.exit(0)));
            resolve();
          });
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  });
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
