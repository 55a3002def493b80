import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { requestBodyBytesInFlight } from '../../src/metrics/metrics';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount } from '../support/factories';
import { HostileAnswer, hostileRequest, HostileRequest } from '../support/hostile-client';
import { SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';
import { waitFor } from '../support/wait-for';

const MB = 1024 * 1024;
const SECRET = 'hostile-bodies-secret';
const FORM_POSTS_PER_MINUTE = 40;
const TRACKING_PER_MINUTE = 10;
/** Room for one form upload (12 MB), or two 6 MB API bodies but not a third. */
const IN_FLIGHT = 12.5 * MB;

// Bodies are bounded before they are read: per-route limits (413 before reading, or cut as a chunked body arrives),
// a cap on the bytes read at once (503), the client IP's limits counted before the body, provider signatures checked
// on the raw bytes, and uploads written to disk. Each request comes from its own client IP (X-Forwarded-For from a
// trusted loopback proxy), so that the limits of one test leave the others alone.
describe('hostile bodies', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let port: number;
  let adminKey: string;
  let formId: string;
  const uploadDir = mkdtempSync(join(tmpdir(), 'hostile-uploads-'));
  const domain = 'hostile.acme.test';
  const site = `https://www.${domain}`;
  const provider = new Webhook(Buffer.from(SECRET, 'utf8'), { format: 'raw' });
  let lastIp = 0;
  /** A client IP no other request of this file used. */
  const freshIp = () => `198.51.100.${++lastIp}`;

  beforeAll(async () => {
    sink = await startSmtpSink();
    t = await createTestApp({
      env: {
        SMTP_URL: sink.url,
        RATE_LIMIT_ENABLED: 'true',
        TRUST_PROXY: 'loopback',
        RATE_LIMIT_FORM_POSTS_PER_MINUTE: String(FORM_POSTS_PER_MINUTE),
        RATE_LIMIT_TRACKING_PER_MINUTE: String(TRACKING_PER_MINUTE),
        BODY_BYTES_IN_FLIGHT: String(IN_FLIGHT),
        PROVIDER_WEBHOOK_SECRET: SECRET,
        UPLOAD_DIR: uploadDir,
      },
    });
    port = (t.app.getHttpServer().address() as AddressInfo).port;
    const account = await createAccount(t, 'Hostile');
    adminKey = account.adminKey;
    await createVerifiedDomain(t, account.accountId, domain);
    const form = await t.http
      .post('/api/forms')
      .set(bearer(adminKey))
      .send({ name: 'Contact', to: 'owner@acme.example', rateLimit: 1000, allowedOrigins: [site] })
      .expect(201);
    formId = form.body.id;
  });

  afterAll(async () => {
    await t?.close();
    await sink?.close();
    rmSync(uploadDir, { recursive: true, force: true });
  });

  const send = (request: HostileRequest, ip = freshIp()) =>
    hostileRequest(port, { ...request, headers: { 'X-Forwarded-For': ip, ...request.headers } });

  const expectError = (answer: HostileAnswer, status: number, code: string) => {
    expect([answer.status, answer.body?.error?.code]).toEqual([status, code]);
    expect(answer.body.documentation).toBe('http://mailroom.test/docs#errors');
  };

  const jsonPost = (path: string, bodyBytes: number, extra: Partial<HostileRequest> = {}): HostileRequest => ({
    method: 'POST',
    path,
    bodyBytes,
    ...extra,
    headers: { 'Content-Type': 'application/json', Origin: site, ...extra.headers },
  });

  /** Past a route's limit, what a client has written before the answer comes: the socket buffers' worth. */
  const BUFFERED = 8 * MB;

  describe('limits by route', () => {
    it('refuses a body announced over its route’s limit with 413 before reading a byte of it', async () => {
      for (const path of [`/f/${formId}`, `/${domain}/contact`, '/provider/events', '/email/send']) {
        const answer = await send(jsonPost(path, 40 * MB, { headOnly: true })).answer;
        expectError(answer, 413, 'PAYLOAD_TOO_LARGE');
        expect(answer.body.error.details).toEqual({ limit_bytes: MB });
      }
      // A tracking link takes no more than a one-click unsubscribe's body.
      const tracking = await send(jsonPost('/u/some-token', 20 * 1024, { headOnly: true })).answer;
      expectError(tracking, 413, 'PAYLOAD_TOO_LARGE');
      expect(tracking.body.error.details).toEqual({ limit_bytes: 16 * 1024 });
      // A call with a valid API key may send more (attachments), up to 40 MB: this one is read, and is no JSON.
      const keyed = await send(jsonPost('/email/send', 2 * MB, { headers: bearer(adminKey) })).answer;
      expectError(keyed, 400, 'MALFORMED_JSON');
      const over = await send(jsonPost('/email/send', 41 * MB, { headOnly: true, headers: bearer(adminKey) })).answer;
      expectError(over, 413, 'PAYLOAD_TOO_LARGE');
      expect(over.body.error.details).toEqual({ limit_bytes: 40 * MB });
    });

    it('cuts a chunked body at its route’s limit with 413, and closes a connection whose body does not end', async () => {
      for (const path of [`/f/${formId}`, '/provider/events', '/t/c/some-token']) {
        const endless = send(jsonPost(path, 1024 * MB, { chunked: true }));
        const answer = await endless.answer;
        expectError(answer, 413, 'PAYLOAD_TOO_LARGE');
        expect(answer.sentBeforeAnswer).toBeLessThan(MB + BUFFERED);
        // The rest is read for a moment (so that the client reads the answer), then the connection is closed.
        await expect(Promise.race([endless.closed.then(() => 'closed'), sleep(15_000).then(() => 'open')])).resolves.toBe('closed');
        expect(endless.sent).toBeLessThan(1024 * MB);
      }
    }, 60_000);

    it('cuts a chunked upload at the upload limit, not after ten files of 10 MB', async () => {
      const boundary = 'hostileBoundary';
      const file = (i: number) =>
        Buffer.concat([
          Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="f${i}"; filename="f${i}.bin"\r\n\r\n`),
          Buffer.alloc(9 * MB, i),
          Buffer.from('\r\n'),
        ]);
      const body = Buffer.concat([...Array.from({ length: 10 }, (_, i) => file(i)), Buffer.from(`--${boundary}--\r\n`)]);
      const upload = send({
        method: 'POST',
        path: `/f/${formId}`,
        body,
        chunked: true,
        headers: { 'Content-Type': `multipart/form-data; boundary=${boundary}`, Origin: site, Accept: 'application/json' },
      });
      const answer = await upload.answer;
      expectError(answer, 413, 'PAYLOAD_TOO_LARGE');
      expect(answer.sentBeforeAnswer).toBeLessThan(12 * MB + BUFFERED);
      await upload.closed;
      // multer removes what it wrote of a body that failed.
      await waitFor(
        'the upload directory to be empty',
        () => readdirSync(uploadDir),
        (files) => files.length === 0,
        10_000,
      );
    }, 60_000);
  });

  it('answers 503 with Retry-After, unread, while the bodies being read fill BODY_BYTES_IN_FLIGHT', async () => {
    await waitFor('the other tests’ bodies to be given back', bytesInFlight, (bytes) => bytes === 0, 10_000);
    // Two sends with a valid key announce 6 MB each and do not send it yet: 12 of the 12.5 MB are taken.
    const holders = [0, 1].map(() => send(jsonPost('/email/send', 6 * MB, { headOnly: true, headers: bearer(adminKey) })));
    await waitFor('the holders’ bytes to be taken', bytesInFlight, (bytes) => bytes === 12 * MB, 10_000);

    for (const request of [
      jsonPost('/email/send', 6 * MB, { headOnly: true, headers: bearer(adminKey) }),
      jsonPost(`/f/${formId}`, MB, { headOnly: true }),
      jsonPost('/provider/events', 1000, { chunked: true, headOnly: true }), // no length: counts as its route's 1 MB
    ]) {
      const answer = await send(request).answer;
      expectError(answer, 503, 'SERVICE_UNAVAILABLE');
      expect(answer.headers['retry-after']).toBe('1');
    }
    // A small body still fits.
    const small = await send(jsonPost(`/f/${formId}`, 100_000, { headers: { Accept: 'application/json' } })).answer;
    expect(small.status).not.toBe(503);

    holders.forEach((holder) => holder.destroy());
    await waitFor('the holders’ bytes to be given back', bytesInFlight, (bytes) => bytes === 0, 10_000);
    expectError(await send(jsonPost('/email/send', 6 * MB, { headers: bearer(adminKey) })).answer, 400, 'MALFORMED_JSON');
  }, 60_000);

  describe('client IP limits before the body', () => {
    it('limits form posts per client IP before reading their body (each form’s own limit still counts later)', async () => {
      const ip = freshIp();
      for (let i = 0; i < FORM_POSTS_PER_MINUTE; i++) {
        expectError(await send(jsonPost(`/f/${formId}`, 2, { body: Buffer.from('{}') }), ip).answer, 400, 'VALIDATION_FAILED');
      }
      const refused = await send(jsonPost(`/f/${formId}`, 1000, { headOnly: true }), ip).answer;
      expectError(refused, 429, 'IP_RATE_LIMIT');
      expect(refused.headers['x-ratelimit-scope']).toBe('ip');
      expect(refused.headers['x-ratelimit-limit']).toBe(String(FORM_POSTS_PER_MINUTE));
      expect(refused.headers['retry-after']).toBeDefined();
    });

    it('refuses form posts before their body once the IP spent its failed-lookup budget on unknown forms', async () => {
      const ip = freshIp();
      for (let i = 0; i < 30; i++) {
        expect((await send(jsonPost(`/f/frm_missing${i}`, 2, { body: Buffer.from('{}') }), ip).answer).status).toBe(404);
      }
      const refused = await send(jsonPost(`/f/${formId}`, 1000, { headOnly: true }), ip).answer;
      expectError(refused, 429, 'IP_RATE_LIMIT');
      expect(refused.headers['x-ratelimit-limit']).toBe('30');
    });

    it('limits the tracking routes per client IP, generously', async () => {
      const ip = freshIp();
      for (let i = 0; i < TRACKING_PER_MINUTE; i++) {
        expect((await send({ method: 'GET', path: `/t/o/token${i}` }, ip).answer).status).not.toBe(429);
      }
      const refused = await send({ method: 'GET', path: '/u/token' }, ip).answer;
      expectError(refused, 429, 'IP_RATE_LIMIT');
      expect(refused.headers['x-ratelimit-limit']).toBe(String(TRACKING_PER_MINUTE));
      // Another client is not held by it.
      expect((await send({ method: 'GET', path: '/t/o/token' }).answer).status).not.toBe(429);
    });
  });

  describe('provider events', () => {
    const signed = (payload: string, signer = provider) => {
      const id = `evt_${randomBytes(4).toString('hex')}`;
      const at = new Date();
      return {
        'Content-Type': 'application/json',
        'webhook-id': id,
        'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
        'webhook-signature': signer.sign(id, at, payload),
      };
    };
    const event = JSON.stringify({ messageId: 'msg_unknown', type: 'delivered' });

    it('checks the signature on the raw bytes before parsing them', async () => {
      const malformed = '{"messageId": ';
      const forged = await send({ method: 'POST', path: '/provider/events', body: Buffer.from(malformed), headers: signed('{}') }).answer;
      expectError(forged, 401, 'SIGNATURE_INVALID');
      const signedMalformed = await send({
        method: 'POST',
        path: '/provider/events',
        body: Buffer.from(malformed),
        headers: signed(malformed),
      }).answer;
      expectError(signedMalformed, 400, 'MALFORMED_JSON');
      const accepted = await send({ method: 'POST', path: '/provider/events', body: Buffer.from(event), headers: signed(event) }).answer;
      expect(accepted.status).toBe(202);
    });

    it('counts bad signatures against the client IP’s failure budget, then refuses it before reading the body', async () => {
      const ip = freshIp();
      const impostor = new Webhook(Buffer.from('not-the-secret', 'utf8'), { format: 'raw' });
      for (let i = 0; i < 30; i++) {
        const answer = await send(
          { method: 'POST', path: '/provider/events', body: Buffer.from(event), headers: signed(event, impostor) },
          ip,
        ).answer;
        expect(answer.status).toBe(401);
      }
      // Even a good signature: the IP is refused before its body is read, and so are its form posts.
      const refused = await send({ method: 'POST', path: '/provider/events', bodyBytes: 1000, headOnly: true, headers: signed(event) }, ip)
        .answer;
      expectError(refused, 429, 'IP_RATE_LIMIT');
      expect(refused.headers['x-ratelimit-limit']).toBe('30');
      expectError(await send(jsonPost(`/f/${formId}`, 1000, { headOnly: true }), ip).answer, 429, 'IP_RATE_LIMIT');
      // Another IP's calls go on.
      expect(
        (await send({ method: 'POST', path: '/provider/events', body: Buffer.from(event), headers: signed(event) }).answer).status,
      ).toBe(202);
    });
  });

  it('writes an upload to UPLOAD_DIR as it arrives, keeps it intact and removes it after the response', async () => {
    const boundary = 'uploadBoundary';
    const marker = randomBytes(6).toString('hex');
    const content = randomBytes(5 * MB);
    const body = Buffer.concat([
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="message"\r\n\r\n${marker}\r\n`),
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="cv"; filename="data.bin"\r\n\r\n`),
      content,
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]);
    const upload = send({
      method: 'POST',
      path: `/f/${formId}`,
      body,
      headers: { 'Content-Type': `multipart/form-data; boundary=${boundary}`, Origin: site, Accept: 'application/json' },
    });
    // Half the file sent: it is on disk, not in the heap.
    await waitFor(
      'part of the file to be sent',
      () => upload.sent,
      (sent) => sent >= 3 * MB,
      10_000,
    );
    upload.stop();
    const sizes = await waitFor(
      'the file to reach the upload directory',
      () => readdirSync(uploadDir).map((name) => statSync(join(uploadDir, name)).size),
      (found) => found.some((size) => size >= 2 * MB),
      10_000,
    );
    expect(sizes).toHaveLength(1);
    upload.resume();
    const answer = await upload.answer;
    expect(answer.status).toBe(200);
    await waitFor(
      'the upload directory to be empty',
      () => readdirSync(uploadDir),
      (files) => files.length === 0,
      10_000,
    );
    const mail = await sink.waitFor((m) => (m.parsed?.text ?? '').includes(marker));
    // 5 MB is more than a notification attaches (5 MB as sent, base64 included): it links to the stored file.
    expect(mail.parsed!.attachments).toEqual([]);
    const link = /\/forms\/files\/[\w-]+\.[\w-]+/.exec(mail.parsed!.text ?? '')![0];
    const download = await t.http
      .get(link)
      .buffer(true)
      .parse((response, done) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => done(null, Buffer.concat(chunks)));
      })
      .expect(200);
    expect(download.headers['content-disposition']).toBe('attachment; filename="data.bin"');
    expect(sha256(download.body as Buffer)).toBe(sha256(content));
    upload.destroy();
  }, 60_000);
});

/** The body gate's reservation, as /metrics reports it. */
async function bytesInFlight(): Promise<number> {
  return (await requestBodyBytesInFlight.get()).values[0]?.value ?? 0;
}

/** A pause that does not keep the test run alive. */
function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

function sha256(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}
