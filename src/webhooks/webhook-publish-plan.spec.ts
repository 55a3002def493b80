import { type OutboxEvent, planPublishing, type PublishOptions, type Subscriber } from './webhook-publish-plan';
import { webhookBody } from './webhook-thin-event';

describe('planPublishing', () => {
  const MB = 1024 * 1024;
  const options = (budgetBytes: number): PublishOptions => {
    let ids = 0;
    return {
      maxPayloadBytes: 256 * 1024,
      budgetBytes,
      fullEventUrl: (eventId) => `https://mailroom.example/email/webhooks/events/${eventId}`,
      newEventId: () => `evt_${++ids}`,
      newDeliveryId: () => `whd_${++ids}`,
    };
  };
  const submission = (id: string, bytes: number, account = 'acc_1'): OutboxEvent => ({
    id,
    account_id: account,
    type: 'form.submission',
    payload: { type: 'form.submission', submissionId: `sub_${id}`, fields: { message: 'x'.repeat(bytes) }, timestamp: 't' },
  });
  const hooks: Subscriber[] = [
    { id: 'whk_1', account_id: 'acc_1', events: ['form.submission'] },
    { id: 'whk_2', account_id: 'acc_1', events: ['form.submission', 'sent'] },
    { id: 'whk_3', account_id: 'acc_2', events: ['form.submission'] },
  ];

  it('makes one delivery per subscribed webhook under one event id, thin above the cap with the whole body kept once', () => {
    const plan = planPublishing([submission('1', 10), submission('2', 300 * 1024)], hooks, options(32 * MB));
    expect(plan.taken.map((e) => e.id)).toEqual(['1', '2']);
    expect(plan.cut).toBe(false);
    expect(plan.deliveries.map((d) => [d.webhook_id, d.event_id])).toEqual([
      ['whk_1', 'evt_1'],
      ['whk_2', 'evt_1'],
      ['whk_1', 'evt_4'],
      ['whk_2', 'evt_4'],
    ]);
    expect(plan.deliveries[2].payload).toMatchObject({ thin: true, submissionId: 'sub_2' });
    expect(plan.fullBodies).toEqual([
      { id: 'evt_4', account_id: 'acc_1', event_type: 'form.submission', payload: submission('2', 300 * 1024).payload },
    ]);
  });

  it('leaves the events past the byte budget for the next batch, whole bodies and every subscriber counted', () => {
    // Each 6 MB submission writes its whole body once and a thin event per webhook.
    const events = Array.from({ length: 100 }, (_, i) => submission(String(i + 1), 6 * MB));
    const plan = planPublishing(events, hooks, options(32 * MB));
    expect(plan.cut).toBe(true);
    expect(plan.taken.map((e) => e.id)).toEqual(['1', '2', '3', '4', '5']);
    const written = JSON.stringify(plan.fullBodies).length + JSON.stringify(plan.deliveries).length;
    expect(written).toBeLessThan(33 * MB);
    expect(plan.deliveries).toHaveLength(10);
  });

  it('counts a payload once per webhook it goes to', () => {
    const many: Subscriber[] = Array.from({ length: 40 }, (_, i) => ({ id: `whk_${i}`, account_id: 'acc_1', events: ['form.submission'] }));
    const event = submission('1', 200 * 1024);
    const body = Buffer.byteLength(webhookBody('evt_1', event.payload));
    const plan = planPublishing([event, submission('2', 10)], many, options(40 * body));
    expect(plan.taken.map((e) => e.id)).toEqual(['1']);
    expect(plan.deliveries).toHaveLength(40);
  });

  it('always takes the first event, however large, and those nobody subscribed to', () => {
    const plan = planPublishing([submission('0', 10, 'acc_9'), submission('1', 2 * MB), submission('2', 10)], hooks, options(1024));
    expect(plan.taken.map((e) => e.id)).toEqual(['0', '1']);
    expect(plan.cut).toBe(true);
    expect(plan.fullBodies).toHaveLength(1);
  });
});
