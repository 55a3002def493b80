import type TestAgent from 'supertest/lib/agent';
import type { SmtpSink } from '../../support/smtp-sink';

export interface SendOutcome {
  subject: string;
  at: number;
  status: number;
  messageId?: string;
  retryAfter?: string;
  code?: string;
}

/**
 * Sends one email every `intervalMs` until stop(), each with its own subject, and records every answer.
 * A request that gets no answer within 10 s is recorded with status 0: outages must be answered, not hang.
 */
export function startSendStream(http: TestAgent, key: string, from: string, prefix: string, intervalMs = 40) {
  const outcomes: SendOutcome[] = [];
  const inFlight = new Set<Promise<void>>();
  let n = 0;
  const sendOne = async () => {
    const subject = `${prefix} ${n++}`;
    const at = Date.now();
    try {
      const res = await http
        .post('/email/send')
        .set('Authorization', `Bearer ${key}`)
        .timeout(10_000)
        .send({ from, to: 'ada@example.org', subject, text: 'chaos' });
      outcomes.push({
        subject,
        at,
        status: res.status,
        messageId: res.body?.messageId,
        retryAfter: res.headers['retry-after'],
        code: res.body?.error?.code,
      });
    } catch {
      outcomes.push({ subject, at, status: 0 });
    }
  };
  const timer = setInterval(() => {
    const request = sendOne().finally(() => inFlight.delete(request));
    inFlight.add(request);
  }, intervalMs);
  return {
    outcomes,
    async stop(): Promise<SendOutcome[]> {
      clearInterval(timer);
      await Promise.all(inFlight);
      return outcomes;
    },
  };
}

/** What a stream's answers must look like through an outage: accepted, or refused with a time to come back. */
export function unexpectedAnswers(outcomes: SendOutcome[]): SendOutcome[] {
  return outcomes.filter((o) => !(o.status === 200 || ((o.status === 503 || o.status === 429) && o.retryAfter !== undefined)));
}

/** Waits until every subject arrived, then lets stragglers come; returns how often each arrived. */
export async function deliveredCounts(sink: SmtpSink, subjects: string[], timeoutMs = 60_000): Promise<Map<string, number>> {
  const wanted = new Set(subjects);
  const counts = () => {
    const bySubject = new Map<string, number>(subjects.map((s) => [s, 0]));
    for (const mail of sink.messages) {
      const subject = mail.parsed?.subject;
      if (subject && wanted.has(subject)) bySubject.set(subject, bySubject.get(subject)! + 1);
    }
    return bySubject;
  };
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && [...counts().values()].some((n) => n === 0)) await new Promise((r) => setTimeout(r, 100));
  await new Promise((r) => setTimeout(r, 1500));
  return counts();
}

export const missing = (counts: Map<string, number>) => [...counts].filter(([, n]) => n === 0).map(([s]) => s);
export const duplicated = (counts: Map<string, number>) => [...counts].filter(([, n]) => n > 1).map(([s]) => s);

/** Polls GET /health/ready until `until` holds for its answer; returns that answer. */
export async function waitForReadiness(http: TestAgent, until: (status: number, body: any) => boolean, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await http
      .get('/health/ready')
      .timeout(5_000)
      .catch(() => null);
    if (res && until(res.status, res.body)) return res;
    if (Date.now() > deadline) throw new Error(`readiness never matched: last ${res?.status} ${JSON.stringify(res?.body)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
