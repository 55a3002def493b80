import { redisOptionsFromUrl } from './redis-url';

describe('redisOptionsFromUrl', () => {
  it('reads host, port, credentials and database', () => {
    expect(redisOptionsFromUrl('redis://user:p%40ss@cache.internal:6380/2')).toEqual({
      host: 'cache.internal',
      port: 6380,
      username: 'user',
      password: 'p@ss',
      db: 2,
    });
  });

  it('defaults the port and keeps IPv6 hosts bare', () => {
    expect(redisOptionsFromUrl('redis://[::1]')).toEqual({ host: '::1', port: 6379 });
  });

  it('turns on TLS for rediss://', () => {
    expect(redisOptionsFromUrl('rediss://:secret@redis.example.com:6379')).toEqual({
      host: 'redis.example.com',
      port: 6379,
      password: 'secret',
      tls: { servername: 'redis.example.com' },
    });
  });
});
