import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { MailParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { DataSource } from 'typeorm';
import { databaseOptions } from '../../src/database/database.options';
import { CHUNK_BYTES } from '../../src/outbox/attachments/attachment-content';
import { AttachmentStore } from '../../src/outbox/attachments/attachment-store';
import { QueueName } from '../../src/queue/queue.constants';
import { type AppProcess, createInstallation, type Installation, startAppProcess } from '../support/app-process';
import { freePort } from '../support/free-port';
import { waitFor } from '../support/wait-for';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { dkimVerify } = require('mailauth/lib/dkim/verify') as {
  dkimVerify: (raw: Buffer, options: { resolver: (name: string, type: string) => Promise<string[][]> }) => Promise<DkimResults>;
};

interface DkimResults {
  results: { signingDomain: string; status: { result: string } }[];
}

const DOMAIN = 'attachments.mailroom.test';
const BACKLOG = 40;
const ATTACHMENT_BYTES = 25 * 1024 * 1024;
/**
 * How much the process's resident memory may grow over what it held before delivery began, while it delivers the
 * backlog. Loading the backlog's rows with their base64 attachments (as before) is 35 MB a message, the 40 of them
 * in a batch; streamed, each delivery in flight holds a chunk or two.
 */
const DELIVERY_GROWTH_BOUND = 300 * 1024 * 1024;
/** What each worker thread may hold for delivery: a message with a 9 MB body goes alone. */
const DELIVERY_BATCH_BYTES = 16 * 1024 * 1024;

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** Messages up to this size keep their raw bytes at the sink (to verify their signature). */
const RAW_KEPT = 4 * 1024 * 1024;

/** What the sink saw of one message: attachments hashed as they streamed in, the raw bytes only of small messages. */
interface SinkMessage {
  subject: string;
  attachments: { filename: string; size: number; hash: string }[];
  raw?: Buffer;
}

interface HashingSink {
  url: string;
  messages: SinkMessage[];
  /** Messages being received now, the most at once since `peak` was reset, and how long each answer is held. */
  transfers: { now: number; peak: number; holdMs: number };
  close(): Promise<void>;
}

/**
 * An SMTP server that parses each message as it arrives (mailparser's stream) and keeps only the SHA-256 of its
 * attachments: forty 35 MB messages must not be held by the test process either.
 */
async function startHashingSink(): Promise<HashingSink> {
  const messages: SinkMessage[] = [];
  const transfers = { now: 0, peak: 0, holdMs: 0 };
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, _session, callback) {
      transfers.peak = Math.max(transfers.peak, ++transfers.now);
      const answer = (err: Error | null) =>
        setTimeout(() => {
          transfers.now--;
          if (err) callback(err);
          else callback(null, 'OK queued');
        }, transfers.holdMs);
      const parser = new MailParser();
      const message: SinkMessage = { subject: '', attachments: [] };
      const small: Buffer[] = [];
      let size = 0;
      stream.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size <= RAW_KEPT) small.push(chunk);
      });
      parser.on('headers', (headers) => (message.subject = (headers.get('subject') as string | undefined) ?? ''));
      parser.on('data', (part: { type: string; filename?: string; content?: NodeJS.ReadableStream; release?: () => void }) => {
        if (part.type !== 'attachment' || !part.content) return;
        const hash = createHash('sha256');
        let bytes = 0;
        part.content.on('data', (chunk: Buffer) => {
          hash.update(chunk);
          bytes += chunk.length;
        });
        part.content.on('end', () => {
          message.attachments.push({ filename: part.filename ?? '', size: bytes, hash: hash.digest('hex') });
          part.release?.();
        });
      });
      parser.on('end', () => {
        if (size <= RAW_KEPT) message.raw = Buffer.concat(small);
        messages.push(message);
        answer(null);
      });
      parser.on('error', (err: Error) => answer(err));
      stream.pipe(parser);
    },
  });
  server.on('error', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.server.address() as AddressInfo;
  return {
    url: `smtp://127.0.0.1:${port}`,
    messages,
    transfers,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Resident memory of a process (VmRSS) in bytes. */
function residentBytes(pid: number): number {
  const kb = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb) * 1024;
}

describe('attachments stored apart from their messages (APP_ROLE=all, two worker threads)', () => {
  let installation: Installation;
  let sink: HashingSink;
  let app: AppProcess;
  let url: string;
  let key: string;
  let dkimRecord: { name: string; value: string };
  let db: DataSource;

  beforeAll(async () => {
    installation = await createInstallation('attachments');
    sink = await startHashingSink();
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    app = startAppProcess('attachments', {
      ...installation.env,
      APP_ROLE: 'all',
      WORKER_PROCESSES: '2',
      PORT: String(port),
      INBOUND_SMTP_PORT: String(await freePort()),
      SMTP_URL: sink.url,
      MALLOC_ARENA_MAX: '2', // as `npm start` runs it
      DELIVERY_BATCH_BYTES: String(DELIVERY_BATCH_BYTES),
    });
    await waitFor(
      'the service to be ready',
      async () => (await fetch(`${url}/health/ready`).catch(() => null))?.ok === true,
      Boolean,
      45_000,
    );
    const tenant = (await (
      await post('/admin/accounts', installation.operatorKey, { name: 'Attachments', tier: 'enterprise' })
    ).json()) as {
      apiKey: { key: string };
    };
    key = tenant.apiKey.key;
    const domain = (await (await post('/domains', key, { domain: DOMAIN })).json()) as {
      dnsRecords: { purpose: string; name: string; value: string }[];
    };
    dkimRecord = domain.dnsRecords.find((r) => r.purpose === 'dkim')!;
    db = new DataSource(databaseOptions(installation.env.DATABASE_URL, undefined, 2));
    await db.initialize();
  }, 60_000);

  afterAll(async () => {
    await db?.destroy();
    await app?.stop();
    await sink?.close();
    await installation?.remove();
  }, 30_000);

  function post(path: string, bearer: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
    return fetch(`${url}${path}`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${bearer}`, 'Content-Type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
  }

  /**
   * POST /email/send as a careful client sends a large body: under an Idempotency-Key, sent again on a connection
   * reset. A kept-alive connection that sat idle can be closed by the server (its keep-alive time-out) just as the
   * client starts writing 35 MB on it; the send is then safe to repeat, and the sink's count shows any duplicate.
   */
  async function postSend(body: string): Promise<Response> {
    const headers = { 'Idempotency-Key': randomUUID() };
    for (let attempt = 1; ; attempt++) {
      try {
        return await post('/email/send', key, body, headers);
      } catch (err) {
        const code = ((err as { cause?: { code?: string } }).cause ?? {}).code;
        if (attempt === 3 || !['EPIPE', 'ECONNRESET', 'UND_ERR_SOCKET'].includes(code ?? '')) throw err;
      }
    }
  }

  /** Pauses or resumes the email queue in Bull Board: paused, accepted messages wait for the workers as a backlog. */
  async function emailQueue(action: 'pause' | 'resume'): Promise<void> {
    const auth = `Basic ${Buffer.from(`ops:${installation.operatorKey}`).toString('base64')}`;
    const res = await fetch(`${url}/admin/queues/api/queues/${QueueName.Email}/${action}`, {
      method: 'PUT',
      headers: { Authorization: auth },
    });
    expect(res.status).toBe(200);
  }

  async function send(subject: string, attachments: { filename: string; bytes: Buffer }[], html?: string): Promise<string> {
    const body = JSON.stringify({
      from: `hello@${DOMAIN}`,
      to: 'ada@example.org',
      subject,
      text: `body of ${subject}`,
      html,
      attachments: attachments.map((a) => ({ filename: a.filename, content: a.bytes.toString('base64') })),
    });
    const res = await postSend(body);
    expect([res.status, subject]).toEqual([200, subject]);
    return ((await res.json()) as { messageId: string }).messageId;
  }

  const rows = <T = unknown>(sql: string, params: unknown[] = []) => db.query<T[]>(sql, params);

  const workerRestarts = () => app.output().match(/Worker thread \d+ exited/g) ?? [];

  it('delivers a backlog of forty 25 MB messages once each, intact, with no worker thread restarting and memory bounded', async () => {
    const pid = app.child.pid!;
    const baseline = residentBytes(pid);
    const acceptStarted = Date.now();
    await emailQueue('pause');
    const expected = new Map<string, string>();
    for (let i = 0; i < BACKLOG; i++) {
      const bytes = randomBytes(ATTACHMENT_BYTES);
      expected.set(`backlog ${i}`, sha256(bytes));
      await send(`backlog ${i}`, [{ filename: `part-${i}.bin`, bytes }]);
    }
    const [{ small }] = await rows<{ small: number }>(
      "SELECT count(*)::int AS small FROM messages WHERE subject LIKE 'backlog %' AND status = 'queued' AND content_bytes < 4096",
    );
    expect(small).toBe(BACKLOG); // the rows hold references, not the bytes

    const accepted = Date.now();
    const before = residentBytes(pid);
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, residentBytes(pid))), 50);
    try {
      await emailQueue('resume');
      await waitFor(
        'the backlog at the sink',
        () => sink.messages.filter((m) => m.subject.startsWith('backlog ')).length,
        (n) => n >= BACKLOG,
        240_000,
      );
      await new Promise((resolve) => setTimeout(resolve, 1000)); // anything sent twice would arrive by now
    } finally {
      clearInterval(sampler);
    }

    const received = sink.messages.filter((m) => m.subject.startsWith('backlog '));
    expect(received.map((m) => m.subject).sort()).toEqual([...expected.keys()].sort());
    for (const message of received) {
      expect(message.attachments).toEqual([
        { filename: `part-${message.subject.slice('backlog '.length)}.bin`, size: ATTACHMENT_BYTES, hash: expected.get(message.subject) },
      ]);
    }
    expect(workerRestarts()).toEqual([]);
    const mb = (bytes: number) => `${Math.round(bytes / 2 ** 20)} MB`;
    process.stdout.write(
      `attachment backlog: RSS ${mb(baseline)} at start, ${mb(before)} once accepted (${accepted - acceptStarted} ms), ` +
        `peak ${mb(peak)} while delivering (${Date.now() - accepted} ms)\n`,
    );
    expect(peak - before).toBeLessThan(DELIVERY_GROWTH_BOUND);
  }, 420_000);

  it('stores the same attachment once for every message carrying it, and each goes out whole and DKIM-signed', async () => {
    const shared = randomBytes(2 * CHUNK_BYTES + 17);
    const first = await send('shared 1', [{ filename: 'shared.bin', bytes: shared }]);
    const second = await send('shared 2', [
      { filename: 'again.bin', bytes: shared },
      { filename: 'note.txt', bytes: Buffer.from('hello\n') },
    ]);

    const blobs = await rows<{ size: number; chunks: number }>(
      'SELECT size, (SELECT count(*)::int FROM attachment_chunks c WHERE c.hash = b.hash) AS chunks FROM attachment_blobs b WHERE hash = $1',
      [sha256(shared)],
    );
    expect(blobs).toEqual([{ size: shared.length, chunks: 3 }]);
    const references = await rows<{ message_id: string }>('SELECT message_id FROM message_attachments WHERE hash = $1', [sha256(shared)]);
    expect(references.map((r) => r.message_id).sort()).toEqual([first, second].sort());

    await waitFor(
      'both at the sink',
      () => sink.messages.filter((m) => m.subject.startsWith('shared ')).length,
      (n) => n >= 2,
      30_000,
    );
    const bySubject = new Map(sink.messages.map((m) => [m.subject, m]));
    expect(bySubject.get('shared 1')!.attachments).toEqual([{ filename: 'shared.bin', size: shared.length, hash: sha256(shared) }]);
    expect(bySubject.get('shared 2')!.attachments).toEqual([
      { filename: 'again.bin', size: shared.length, hash: sha256(shared) },
      { filename: 'note.txt', size: 6, hash: sha256(Buffer.from('hello\n')) },
    ]);
  }, 60_000);

  it('signs a streamed message so that DKIM verifies, and still sends messages accepted with their attachments inline', async () => {
    const bytes = randomBytes(200_000);
    await emailQueue('pause');
    const id = await send('inline', [{ filename: 'old.bin', bytes }]);
    // As a message accepted before attachments were stored apart: base64 in its content, no references, no size.
    await db.query(`UPDATE messages SET content = jsonb_set(content, '{attachments}', $2::jsonb), content_bytes = NULL WHERE id = $1`, [
      id,
      JSON.stringify([{ filename: 'old.bin', content: bytes.toString('base64') }]),
    ]);
    await db.query('DELETE FROM message_attachments WHERE message_id = $1', [id]);
    await emailQueue('resume');

    const inline = await waitFor('the message at the sink', () => sink.messages.find((m) => m.subject === 'inline'), Boolean, 30_000);
    expect(inline!.attachments).toEqual([{ filename: 'old.bin', size: bytes.length, hash: sha256(bytes) }]);
    const resolver = (name: string, type: string) =>
      name === dkimRecord.name && type === 'TXT'
        ? Promise.resolve([[dkimRecord.value]])
        : Promise.reject(new Error(`no ${type} for ${name}`));
    for (const subject of ['inline', 'shared 2']) {
      const { results } = await dkimVerify(sink.messages.find((m) => m.subject === subject)!.raw!, { resolver });
      expect(results).toEqual([expect.objectContaining({ signingDomain: DOMAIN, status: expect.objectContaining({ result: 'pass' }) })]);
    }
  }, 60_000);

  it('holds what a worker thread loads for delivery to DELIVERY_BATCH_BYTES: a backlog of 9 MB bodies goes one at a time', async () => {
    await emailQueue('pause');
    const bodies = 6;
    for (let i = 0; i < bodies; i++)
      await send(`large body ${i}`, [], `<p>${'Lorem ipsum dolor sit amet. '.repeat(330_000)}</p><p>${i}</p>`);
    sink.transfers.peak = 0;
    sink.transfers.holdMs = 300; // each answer waits: deliveries a thread runs at once overlap at the sink
    try {
      await emailQueue('resume');
      await waitFor(
        'the bodies at the sink',
        () => sink.messages.filter((m) => m.subject.startsWith('large body ')).length,
        (n) => n >= bodies,
        60_000,
      );
    } finally {
      sink.transfers.holdMs = 0;
    }
    // Two worker threads, each holding one 9 MB message at a time (two do not fit in its 16 MB).
    expect(sink.transfers.peak).toBeLessThanOrEqual(2);
    expect(workerRestarts()).toEqual([]);
  }, 90_000);

  it('lets retention release a message’s attachments, and deletes the bytes once no message refers to them', async () => {
    const store = new AttachmentStore(db);
    const note = sha256(Buffer.from('hello\n'));
    const [{ hash: shared }] = await rows<{ hash: string }>(
      "SELECT hash FROM message_attachments r JOIN messages m ON m.id = r.message_id WHERE m.subject = 'shared 1'",
    );
    const ids = (await rows<{ id: string }>("SELECT id FROM messages WHERE subject LIKE 'shared %' ORDER BY subject")).map((r) => r.id);
    const stored = async (hash: string) => (await rows('SELECT 1 FROM attachment_blobs WHERE hash = $1', [hash])).length;

    // Bytes no message refers to (those of 'inline', whose references were dropped, as after an acceptance that
    // failed once they were stored) go once the hour after they were last taken is over.
    const inline = sha256(
      (
        await rows<{ content: string }>("SELECT content->'attachments'->0->>'content' AS content FROM messages WHERE subject = 'inline'")
      ).map((r) => Buffer.from(r.content, 'base64'))[0],
    );
    expect(await stored(inline)).toBe(1);
    expect(await store.deleteUnreferenced(100)).toBe(0);
    await db.query("UPDATE attachment_blobs SET referenced_at = now() - interval '2 hours'");
    expect(await store.deleteUnreferenced(100)).toBe(1);
    expect(await stored(inline)).toBe(0);

    // Bytes still referred to (by 'shared 2'), or taken by an acceptance within the hour: kept.
    await db.transaction((manager) => store.release(manager, ids.slice(0, 1))); // 'shared 1'
    expect(await store.deleteUnreferenced(100)).toBe(0);
    await db.transaction((manager) => store.release(manager, ids));
    await db.query('UPDATE attachment_blobs SET referenced_at = now() WHERE hash = $1', [note]);
    expect(await store.deleteUnreferenced(100)).toBe(1);
    expect([await stored(shared), await stored(note)]).toEqual([0, 1]);
    expect(await db.query('SELECT count(*)::int AS n FROM attachment_chunks WHERE hash = $1', [shared])).toEqual([{ n: 0 }]);

    // The backlog's bytes are still referred to by their messages.
    const [{ backlog }] = await rows<{ backlog: number }>(
      'SELECT count(*)::int AS backlog FROM attachment_blobs b JOIN message_attachments r ON r.hash = b.hash ' +
        "JOIN messages m ON m.id = r.message_id WHERE m.subject LIKE 'backlog %'",
    );
    expect(backlog).toBe(BACKLOG);
  }, 30_000);
});
