import { Agent } from 'node:http';
import Bull from 'bull';
import { Webhook } from 'standardwebhooks';
import { postSignedEvent } from './arrivals';

/**
 * The floor a Bull-based webhook sender cannot go below, run as its own process by the webhook-deliveries
 * scenario: a bare Bull worker whose jobs each carry an event that it signs with `standardwebhooks` and POSTs
 * over keep-alive — no database, no delivery log, no address checks. Exits once `BARE_COUNT` jobs are done.
 */
function main(): void {
  const count = Number(process.env.BARE_COUNT);
  const target = new URL(process.env.BARE_TARGET!);
  const signer = new Webhook(process.env.BARE_SECRET!);
  const agent = new Agent({ keepAlive: true });
  const queue = new Bull<{ id: string; payload: Record<string, unknown> }>('bare-webhooks', process.env.BARE_REDIS_URL!, {
    prefix: process.env.BARE_PREFIX,
    defaultJobOptions: { removeOnComplete: 1000, removeOnFail: 5000 },
  });
  let done = 0;
  void queue.process(Number(process.env.BARE_CONCURRENCY), async (job) => {
    await postSignedEvent(target, agent, signer, job.data.id, job.data.payload);
    if (++done === count) setImmediate(() => void queue.close().then(() => process.exit(0)));
  });
}

main();
