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

  it('invalidates a cache by account, by the key a change names, or whole when changes may have been missed', async () => {
    let resubscribed = () => {};
    const redis = {
      publish: () => Promise.resolve(),
      subscribe: (_channel: string, _onMessage: unknown, onResubscribe: () => void) => Promise.resolve(void (resubscribed = onResubscribe)),
    } as unknown as RedisService;
    const changes = new DomainChanges(redis);
    await changes.onModuleInit();
    const byAccount = { invalidate: jest.fn(), clear: jest.fn() };
    const byName = { invalidate: jest.fn(), clear: jest.fn() };
    changes.invalidates(byAccount);
    changes.invalidates(byName, (change) => (change.name ? `${change.accountId}/${change.name}` : null));
    await changes.changed('acc_1', 'example.org');
    await changes.changed('acc_1', null);
    expect(byAccount.invalidate.mock.calls).toEqual([['acc_1'], ['acc_1']]);
    expect(byName.invalidate.mock.calls).toEqual([['acc_1/example.org']]);
    expect(byName.clear).toHaveBeenCalledTimes(1);
    expect(byAccount.clear).not.toHaveBeenCalled();
    resubscribed();
    expect(byAccount.clear).toHaveBeenCalledTimes(1);
    expect(byName.clear).toHaveBeenCalledTimes(2);
  });

  it('reads a published change; anything else means anything may have changed', () => {
    expect(parseChange('{"accountId":"acc_1","name":null}')).toEqual({ accountId: 'acc_1', name: null });
    expect(parseChange('{"accountId":1}')).toBeNull();
    expect(parseChange('not json')).toBeNull();
  });
});
