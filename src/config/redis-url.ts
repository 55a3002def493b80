import type { RedisOptions } from 'ioredis';

/** What REDIS_URL names: one server, the master a set of Sentinels points at, or a Redis Cluster. */
export type RedisTarget =
  | { mode: 'standalone' | 'sentinel'; options: RedisOptions }
  /** options: those of every node's connection. */
  | { mode: 'cluster'; nodes: { host: string; port: number }[]; options: RedisOptions };

const MODES = new Map<string, RedisTarget['mode']>([
  ['redis', 'standalone'],
  ['rediss', 'standalone'],
  ['redis-sentinel', 'sentinel'],
  ['rediss-sentinel', 'sentinel'],
  ['redis-cluster', 'cluster'],
  ['rediss-cluster', 'cluster'],
]);
const SCHEMES = 'redis://, rediss://, redis-sentinel://, rediss-sentinel://, redis-cluster:// or rediss-cluster://';
const SENTINEL_SHAPE = 'redis-sentinel://[user:password@]host:26379[,host:26379…]/<master name>[/<db>]';
const CLUSTER_SHAPE = 'redis-cluster://[user:password@]host:6379[,host:6379…]';
/** Sentinel's own credentials, when its instances require them (`requirepass` in sentinel.conf). */
const SENTINEL_PARAMETERS = ['sentinelUsername', 'sentinelPassword'];

/**
 * Reads REDIS_URL. Besides redis:// and rediss:// it takes a Sentinel and a Cluster form, both listing
 * several hosts (which WHATWG URLs cannot hold, so they are read here):
 * - `redis-sentinel://[user:password@]host:26379,host:26379/mymaster[/db][?sentinelPassword=…]`: the
 *   credentials and db are the master's; the Sentinels' own credentials, if any, go in the query.
 * - `redis-cluster://[user:password@]host:6379,host:6379`: any reachable nodes; the others are discovered.
 * The `rediss-` forms use TLS. Throws an error saying what is wrong with a malformed URL.
 */
export function parseRedisUrl(url: string): RedisTarget {
  const match = /^([a-z-]+):\/\/(?:([^@/?#]*)@)?([^/?#]*)([^?#]*)(?:\?([^#]*))?$/.exec(url);
  if (!match) throw new Error(`must be a ${SCHEMES} URL`);
  const [, scheme, userinfo, hostList, path, query] = match;
  const tls = scheme.startsWith('rediss');
  const mode = MODES.get(scheme);
  if (!mode) throw new Error(`must be a ${SCHEMES} URL, not ${scheme}://`);
  const credentials = credentialsOf(userinfo);
  const hosts = hostList.split(',').map((entry) => hostAndPort(entry, mode === 'sentinel' ? 26379 : 6379));
  const segments = path.split('/').filter(Boolean);

  if (mode === 'standalone') {
    if (hosts.length > 1) throw new Error(`names one host in ${scheme}://; several are redis-sentinel:// or redis-cluster://`);
    const [db, ...extra] = segments;
    if (extra.length) throw new Error(`has a path of more than a database number: ${path}`);
    return {
      mode,
      options: {
        ...hosts[0],
        ...credentials,
        ...(db ? { db: databaseNumber(db) } : {}),
        ...(tls ? { tls: { servername: hosts[0].host } } : {}),
      },
    };
  }

  if (mode === 'sentinel') {
    const [name, db, ...extra] = segments;
    if (!name || extra.length) throw new Error(`must be shaped ${SENTINEL_SHAPE}`);
    const parameters = new URLSearchParams(query ?? '');
    const unknown = [...parameters.keys()].filter((key) => !SENTINEL_PARAMETERS.includes(key));
    if (unknown.length) throw new Error(`takes only ${SENTINEL_PARAMETERS.join(' and ')} as parameters, not ${unknown.join(', ')}`);
    return {
      mode,
      options: {
        sentinels: hosts,
        name: decodeURIComponent(name),
        ...credentials,
        ...(db ? { db: databaseNumber(db) } : {}),
        ...Object.fromEntries(SENTINEL_PARAMETERS.filter((key) => parameters.has(key)).map((key) => [key, parameters.get(key)])),
        // The master and the Sentinels both over TLS.
        ...(tls ? { tls: {}, enableTLSForSentinelMode: true, sentinelTLS: {} } : {}),
      },
    };
  }

  if (segments.length) throw new Error(`must be shaped ${CLUSTER_SHAPE}: a Cluster has only database 0, so no /db`);
  if (query) throw new Error(`takes no parameters in ${scheme}://`);
  return { mode, nodes: hosts, options: { ...credentials, ...(tls ? { tls: {} } : {}) } };
}

/** Why REDIS_URL cannot be used, or null when it can. */
export function redisUrlProblem(url: string): string | null {
  try {
    parseRedisUrl(url);
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}

export function isClusterUrl(url: string): boolean {
  return /^rediss?-cluster:\/\//.test(url);
}

/**
 * The prefix of every key on a Cluster: a multi-key script, MULTI or pipeline must keep its keys in one hash
 * slot, so the prefix becomes a hash tag (`mailroom:` → `{mailroom}:`) unless it already holds one. All of an
 * installation's keys then live on one node: Cluster gives it failover, not sharding.
 */
export function hashTaggedPrefix(prefix: string): string {
  if (/^[^{]*\{[^}]+\}/.test(prefix)) return prefix;
  const [, name, separator] = /^(.*?)(:*)$/.exec(prefix)!;
  return `{${name || 'mailroom'}}${separator || ':'}`;
}

function credentialsOf(userinfo: string | undefined): Pick<RedisOptions, 'username' | 'password'> {
  if (!userinfo) return {};
  const at = userinfo.indexOf(':');
  const username = decodeURIComponent(at < 0 ? userinfo : userinfo.slice(0, at));
  const password = at < 0 ? '' : decodeURIComponent(userinfo.slice(at + 1));
  return { ...(username ? { username } : {}), ...(password ? { password } : {}) };
}

function hostAndPort(entry: string, defaultPort: number): { host: string; port: number } {
  const match = /^(\[[0-9a-fA-F:.]+\]|[^:[\]\s]+)(?::(\d{1,5}))?$/.exec(entry);
  if (!match || (match[2] !== undefined && Number(match[2]) > 65535)) {
    throw new Error(entry ? `has a host that is not host[:port]: "${entry}"` : 'has an empty host');
  }
  return { host: match[1].replace(/^\[(.*)\]$/, '$1'), port: match[2] ? Number(match[2]) : defaultPort };
}

function databaseNumber(segment: string): number {
  if (!/^\d+$/.test(segment)) throw new Error(`has a database that is not a number: ${segment}`);
  return Number(segment);
}
