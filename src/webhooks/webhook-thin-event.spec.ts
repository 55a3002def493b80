import { capPayload, webhookBody } from './webhook-thin-event';

describe('capPayload', () => {
  const url = 'https://mailroom.example/email/webhooks/events/evt_1';
  const submission = {
    type: 'form.submission',
    formId: 'frm_1',
    formName: 'Contact',
    submissionId: 'sub_1',
    fields: { message: 'x'.repeat(5000) },
    files: [],
    messageIds: ['msg_1'],
    timestamp: '2026-06-09T10:00:00.000Z',
  };

  it('leaves a payload whose body fits alone', () => {
    const small = { ...submission, fields: { message: 'hi' } };
    expect(capPayload('evt_1', small, 4096, url)).toMatchObject({ payload: small, thin: false });
    expect(capPayload('evt_1', small, 4096, url).bytes).toBe(Buffer.byteLength(webhookBody('evt_1', small)));
  });

  it('counts the body as sent, id included, against the cap', () => {
    const size = Buffer.byteLength(webhookBody('evt_1', submission));
    expect(capPayload('evt_1', submission, size, url).thin).toBe(false);
    expect(capPayload('evt_1', submission, size - 1, url).thin).toBe(true);
  });

  it('keeps type, timestamp and the short scalar fields of a large payload, and says where the rest is', () => {
    const { payload, thin } = capPayload('evt_1', submission, 2048, url);
    expect(thin).toBe(true);
    expect(payload).toEqual({
      type: 'form.submission',
      formId: 'frm_1',
      formName: 'Contact',
      submissionId: 'sub_1',
      timestamp: '2026-06-09T10:00:00.000Z',
      thin: true,
      fullEventBytes: Buffer.byteLength(webhookBody('evt_1', submission)),
      fullEventUrl: url,
    });
    const body = webhookBody('evt_1', payload);
    expect(Buffer.byteLength(body)).toBeLessThanOrEqual(2048);
    expect(Object.keys(JSON.parse(body)).slice(0, 3)).toEqual(['id', 'type', 'timestamp']);
  });

  it('drops long strings, and every scalar when they alone would pass the cap', () => {
    const wide = { type: 'delivered', timestamp: 't', detail: 'd'.repeat(201), metadata: { a: 1 } };
    expect(capPayload('evt_1', wide, 200, url).payload).toEqual({
      type: 'delivered',
      timestamp: 't',
      thin: true,
      fullEventBytes: 281,
      fullEventUrl: url,
    });
    const many = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`k${i}`, 'v'.repeat(100)]));
    const { payload } = capPayload('evt_1', { type: 'x', timestamp: 't', ...many }, 1024, url);
    expect(Object.keys(payload)).toEqual(['type', 'timestamp', 'thin', 'fullEventBytes', 'fullEventUrl']);
  });
});
