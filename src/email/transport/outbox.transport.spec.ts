import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bufferSource } from './mail-transport';
import { OutboxTransport } from './outbox.transport';

describe('OutboxTransport', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mailroom-outbox-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('writes the message with its envelope to <dir>/<messageId>.eml', async () => {
    const transport = new OutboxTransport(join(dir, 'outbox'));
    const raw = Buffer.from('From: a@acme.test\r\nTo: b@example.org\r\nSubject: hi\r\nMessage-ID: <1@acme.test>\r\n\r\nbody\r\n');
    const result = await transport.send({
      messageId: 'msg_1',
      from: 'a@acme.test',
      recipients: ['b@example.org', 'c@example.org'],
      source: bufferSource(raw),
    });
    await transport.close();
    expect(result.accepted).toEqual(['b@example.org', 'c@example.org']);
    const file = await readFile(join(dir, 'outbox', 'msg_1.eml'), 'utf8');
    expect(file).toMatch(
      /^X-Outbox-Mail-From: <a@acme\.test>\r\nX-Outbox-Rcpt-To: <b@example\.org>\r\nX-Outbox-Rcpt-To: <c@example\.org>\r\n/,
    );
    expect(file.endsWith(raw.toString())).toBe(true);
  });
});
