import type { RedisService } from '../redis/redis.service';
import { DomainChange, DomainChanges, parseChange } from './domain-changes';

describe('DomainChanges', () => {
  it('tells this instance’s listeners at once and publishes the change', async () => {
    const published: string[] = [];
    const redis = {
      publish: (_channel: string, message: string) => Promise.resolve(void published.push(message)),
    } as unknown as RedisService;
    const changes = new DomainChanges(redis);
    const told: (DomainChange | null)[] = [];
    changes.register((change) => told.push(change));
    changes.register(() => {
      throw new Error('a broken listener does not stop the others');
    });
    await changes.changed('acc_1', 'example.org');
    expect(told).toEqual([{ accountId: 'acc_1', name: 'example.org' }]);
    expect(published.map(parseChange)).toEqual([{ accountId: 'acc_1', name: 'example.org' }]);
  });

  it('reads a published change; anything else means anything may have changed', () => {
    expect(parseChange('{"accountId":"acc_1","name":null}')).toEqual({ accountId: 'acc_1', name: null });
    expect(parseChange('{"accountId":1}')).toBeNull();
    expect(parseChange('not json')).toBeNull();
  });
});
