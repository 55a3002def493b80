import { hashTaggedPrefix, parseRedisUrl, redisUrlProblem } from './redis-url';

describe('parseRedisUrl', () => {
  it('reads host, port, credentials and database', () => {
    expect(parseRedisUrl('redis://user:p%40ss@cache.internal:6380/2')).toEqual({
      mode: 'standalone',
      options: { host: 'cache.internal', port: 6380, username: 'user', password: 'p@ss', db: 2 },
    });
  });

  it('defaults the port and keeps IPv6 hosts bare', () => {
    expect(parseRedisUrl('redis://[::1]').options).toEqual({ host: '::1', port: 6379 });
  });

  it('turns on TLS for rediss://', () => {
    expect(parseRedisUrl('rediss://:secret@redis.example.com:6379').options).toEqual({
      host: 'redis.example.com',
      port: 6379,
      password: 'secret',
      tls: { servername: 'redis.example.com' },
    });
  });

  it('reads the Sentinels, the master name, its credentials and database, and the Sentinels’ own password', () => {
    expect(
      parseRedisUrl('redis-sentinel://app:p%2Fw@s1.internal:26380,s2.internal,[fd00::3]:26381/main%20cache/3?sentinelPassword=s%26p'),
    ).toEqual({
      mode: 'sentinel',
      options: {
        sentinels: [
          { host: 's1.internal', port: 26380 },
          { host: 's2.internal', port: 26379 },
          { host: 'fd00::3', port: 26381 },
        ],
        name: 'main cache',
        username: 'app',
        password: 'p/w',
        db: 3,
        sentinelPassword: 's&p',
      },
    });
  });

  it('reaches the master and the Sentinels over TLS for rediss-sentinel://', () => {
    expect(parseRedisUrl('rediss-sentinel://s1:26379/mymaster').options).toEqual({
      sentinels: [{ host: 's1', port: 26379 }],
      name: 'mymaster',
      tls: {},
      enableTLSForSentinelMode: true,
      sentinelTLS: {},
    });
  });

  it('reads the Cluster nodes and the credentials every node takes', () => {
    expect(parseRedisUrl('redis-cluster://:secret@n1:7000,n2:7001,n3')).toEqual({
      mode: 'cluster',
      nodes: [
        { host: 'n1', port: 7000 },
        { host: 'n2', port: 7001 },
        { host: 'n3', port: 6379 },
      ],
      options: { password: 'secret' },
    });
    expect(parseRedisUrl('rediss-cluster://n1:7000/').options).toEqual({ tls: {} });
  });

  it.each([
    ['http://cache:6379', /must be a redis:\/\/, rediss:\/\/, redis-sentinel:\/\/.* URL, not http:\/\//],
    ['cache:6379', /must be a redis:\/\/.* URL/],
    ['redis://a:6379,b:6379', /names one host in redis:\/\/; several are redis-sentinel:\/\/ or redis-cluster:\/\//],
    ['redis://cache/two', /database that is not a number: two/],
    ['redis-sentinel://s1:26379,s2:26379', /must be shaped redis-sentinel:\/\/.*\/<master name>\[\/<db>\]/],
    ['redis-sentinel://s1/mymaster/0/x', /must be shaped redis-sentinel:\/\//],
    ['redis-sentinel://s1/mymaster?password=x', /takes only sentinelUsername and sentinelPassword as parameters, not password/],
    ['redis-cluster://n1:7000,n2:7001/1', /a Cluster has only database 0/],
    ['redis-cluster://n1:7000,,n2', /has an empty host/],
    ['redis-cluster://n1:port', /has a host that is not host\[:port\]: "n1:port"/],
    ['redis-cluster://n1:70000', /has a host that is not host\[:port\]: "n1:70000"/],
  ])('refuses %s, saying why', (url, reason) => {
    expect(redisUrlProblem(url)).toMatch(reason);
  });

  it('accepts every form it reads', () => {
    for (const url of ['redis://127.0.0.1:6379', 'rediss://cache', 'redis-sentinel://s1/m', 'rediss-cluster://n1,n2']) {
      expect(redisUrlProblem(url)).toBeNull();
    }
  });
});

describe('hashTaggedPrefix', () => {
  it('makes the prefix a hash tag, keeping its separator', () => {
    expect(hashTaggedPrefix('mailroom:')).toBe('{mailroom}:');
    expect(hashTaggedPrefix('acme:mail::')).toBe('{acme:mail}::');
    expect(hashTaggedPrefix('acme')).toBe('{acme}:');
    expect(hashTaggedPrefix('')).toBe('{mailroom}:');
  });

  it('keeps a prefix that holds a hash tag already', () => {
    expect(hashTaggedPrefix('{acme}:mail:')).toBe('{acme}:mail:');
    expect(hashTaggedPrefix('prod:{acme}:')).toBe('prod:{acme}:');
  });
});
