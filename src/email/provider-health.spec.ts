import { randomBytes } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { AppConfigService } from '../config/app-config.service';
import { RedisService } from '../redis/redis.service';
import { ProviderHealth } from './provider-health';

/** The shared provider state in the real Redis (127.0.0.1:6379 or TEST_REDIS_URL), as two workers see it. */
describe('ProviderHealth', () => {
  const config = AppConfigService.fromEnv({
    NODE_ENV: 'test',
    REDIS_URL: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
    REDIS_KEY_PREFIX: `mailroom-unit:${randomBytes(4).toString('hex')}:`,
  });
  const connections: RedisService[] = [];
  const worker = () => {
    const redis = new RedisService(config);
    connections.push(redis);
    return new ProviderHealth(redis);
  };
  afterAll(async () => {
    await connections[0]?.client.del(connections[0].key('email', 'provider-failure'));
    await Promise.all(connections.map((c) => c.onApplicationShutdown()));
  });

  it('is down from the first failure any worker sees, logged once per outage, and up after the next success', async () => {
    const errors = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    const logs = jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
    try {
      const [a, b] = [worker(), worker()];
      expect(await a.state()).toBe('up');

      await a.failing('AUTH PLAIN: 535 5.7.8 Authentication credentials invalid');
      await b.failing('AUTH PLAIN: 535 5.7.8 Authentication credentials invalid');
      await a.failing('AUTH PLAIN: 535 5.7.8 Authentication credentials invalid');
      expect(await b.state()).toBe('down');
      expect(errors).toHaveBeenCalledTimes(1);
      expect(String(errors.mock.calls[0][0])).toContain('535 5.7.8');

      b.working();
      for (let i = 0; i < 50 && (await a.state()) === 'down'; i++) await new Promise((r) => setTimeout(r, 20));
      expect(await a.state()).toBe('up');
      expect(logs).toHaveBeenCalledWith('The SMTP provider takes messages again');

      await b.failing('ECONNECTION: connect ECONNREFUSED');
      expect(errors).toHaveBeenCalledTimes(2);

      // /health/ready is public: what it reads has no address of anyone; the error log has the whole line.
      await connections[0].client.del(connections[0].key('email', 'provider-failure'));
      await a.failing('RCPT TO ann@example.org: 550 5.7.1 <ann@example.org>: Relaying denied for bounce+x1@mr.test');
      expect(await b.failure()).toEqual({ state: 'down', reason: 'RCPT TO: 550 5.7.1: Relaying denied for' });
      expect(String(errors.mock.calls[2][0])).toContain('RCPT TO ann@example.org: 550 5.7.1 <ann@example.org>');
      a.onApplicationShutdown();
      b.onApplicationShutdown();
    } finally {
      errors.mockRestore();
      logs.mockRestore();
    }
  });
});
