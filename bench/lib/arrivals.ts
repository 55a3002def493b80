import { Agent, request } from 'node:http';
import { Webhook } from 'standardwebhooks';

/** Items per second between the first and the last of `count` arrival times (ms) from index `from`. */
export function arrivalRate(arrivals: number[], from: number, count: number): number {
  const window = arrivals.slice(from, from + count);
  const seconds = (window[window.length - 1] - window[0]) / 1000;
  return seconds > 0 ? Math.round((window.length - 1) / seconds) : 0;
}

export async function waitUntil(check: () => boolean | Promise<boolean>, timeoutMs: number, intervalMs = 20): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** POSTs one event as a webhook sender must: JSON, signed with the Standard Webhooks headers, over `agent`. */
export function postSignedEvent(target: URL, agent: Agent, signer: Webhook, id: string, payload: Record<string, unknown>): Promise<void> {
  const body = JSON.stringify({ id, ...payload });
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
          'webhook-id': id,
          'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
          'webhook-signature': signer.sign(id, timestamp, body),
        },
      },
      (res) => {
        res.resume();
        res.on('end', resolve);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
