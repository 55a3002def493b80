import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AppConfigService } from './app-config.service';
import { ConfigurationError, ENV_KEYS, validateEnv } from './env.schema';

describe('validateEnv', () => {
  it('gives the local defaults on an empty environment', () => {
    const env = validateEnv({});
    expect(env.DATABASE_URL).toBe('postgres://postgres@127.0.0.1:5432/mailroom');
    expect(env.REDIS_URL).toBe('redis://127.0.0.1:6379');
    expect(env.PORT).toBe(3000);
    expect(new AppConfigService(env).publicUrl).toBe('http://localhost:3000');
    expect(env.APP_ROLE).toBe('all');
    expect(env.MIGRATIONS_RUN).toBe(true);
    expect(env.LOG_FORMAT).toBe('json');
  });

  it('makes PUBLIC_URL follow PORT unless it is set', () => {
    expect(AppConfigService.fromEnv({ PORT: '3300', PUBLIC_URL: '' }).publicUrl).toBe('http://localhost:3300');
    expect(AppConfigService.fromEnv({ PORT: '3300', PUBLIC_URL: 'https://mail.example.com/' }).publicUrl).toBe('https://mail.example.com');
  });

  it('keeps the local mail defaults readable, and says what to set for real mail', () => {
    const local = AppConfigService.fromEnv({ PUBLIC_URL: 'http://localhost:3000', FORMS_FROM: '', RETURN_PATH_DOMAIN: '' });
    expect(local.formsFrom.address).toBe('forms@mailroom.localhost');
    expect(AppConfigService.fromEnv({ PUBLIC_URL: 'http://mailbox:3000', FORMS_FROM: '' }).formsFrom.address).toBe(
      'forms@mailbox.localhost',
    );
    expect(AppConfigService.fromEnv({ PUBLIC_URL: 'https://mail.example.com', FORMS_FROM: '' }).formsFrom.address).toBe(
      'forms@mail.example.com',
    );
  });

  it('converts numbers and booleans and treats empty values as unset', () => {
    const env = validateEnv({ PORT: '8080', MIGRATIONS_RUN: 'false', SMTP_URL: '' });
    expect(env.PORT).toBe(8080);
    expect(env.MIGRATIONS_RUN).toBe(false);
    expect(env.SMTP_URL).toBeUndefined();
  });

  it('stops with a message naming each bad variable', () => {
    const message = (() => {
      try {
        validateEnv({ PORT: 'eighty', APP_ROLE: 'everything', REDIS_URL: 'http://x' });
        return '';
      } catch (err) {
        return (err as Error).message;
      }
    })();
    expect(message).toMatch(/^Invalid configuration/);
    for (const name of ['PORT', 'APP_ROLE', 'REDIS_URL']) expect(message).toMatch(new RegExp(`\\n  ${name} `));
    expect(message).not.toMatch(/DATABASE_URL/);
    expect(() => validateEnv({ BOOTSTRAP_ADMIN_KEY: 'svc_sk_usage_' + 'a'.repeat(64) })).toThrow(/BOOTSTRAP_ADMIN_KEY/);
  });

  it('says one thing per bad variable, with the value given unless it is a secret', () => {
    const problems = (() => {
      try {
        validateEnv({ PORT: 'abc', SMTP_URL: 'http://user:hunter2@smtp.example.com', ENCRYPTION_KEY: 'not-a-key', DATABASE_URL: 'x' });
        return [];
      } catch (err) {
        return (err as ConfigurationError).problems;
      }
    })();
    expect(problems).toEqual([
      'PORT must be an integer number (got "abc")',
      'DATABASE_URL must be a postgres:// URL (got "x")',
      'ENCRYPTION_KEY must be 32 bytes as 64 hex characters or base64',
      'SMTP_URL must be an smtp:// or smtps:// URL (got "http://user:***@smtp.example.com")',
    ]);
    expect(problems.join('\n')).not.toContain('hunter2');
  });

  it('takes Sentinel and Cluster REDIS_URLs and says what is wrong with a malformed one', () => {
    expect(validateEnv({ REDIS_URL: 'redis-sentinel://s1:26379,s2:26379/mymaster' }).REDIS_URL).toBe(
      'redis-sentinel://s1:26379,s2:26379/mymaster',
    );
    expect(validateEnv({ REDIS_URL: 'rediss-cluster://n1:7000,n2:7001' }).REDIS_URL).toBe('rediss-cluster://n1:7000,n2:7001');
    expect(() => validateEnv({ REDIS_URL: 'redis-sentinel://s1:26379,s2:26379' })).toThrow(
      /\n {2}REDIS_URL must be shaped redis-sentinel:\/\/\[user:password@\]host:26379\[,host:26379…\]\/<master name>\[\/<db>\]/,
    );
  });

  it('makes the Redis key prefix a hash tag on a Cluster only', () => {
    expect(AppConfigService.fromEnv({ REDIS_URL: 'redis-cluster://n1:7000', REDIS_KEY_PREFIX: 'acme:' }).redisKeyPrefix).toBe('{acme}:');
    expect(AppConfigService.fromEnv({ REDIS_URL: 'redis-sentinel://s1/m', REDIS_KEY_PREFIX: 'acme:' }).redisKeyPrefix).toBe('acme:');
    expect(() => validateEnv({ REDIS_KEY_PREFIX: '{acme}:' })).not.toThrow();
  });

  it('accepts a well-formed bootstrap admin key for the configured prefix', () => {
    const key = `acme_sk_admin_${'ab'.repeat(32)}`;
    expect(validateEnv({ KEY_PREFIX: 'acme', BOOTSTRAP_ADMIN_KEY: key }).BOOTSTRAP_ADMIN_KEY).toBe(key);
  });

  it('is documented: the README’s configuration table names every variable', () => {
    const readme = readFileSync(join(__dirname, '..', '..', 'README.md'), 'utf8');
    expect(ENV_KEYS.filter((key) => !readme.includes(`| \`${key}\` |`))).toEqual([]);
  });
});
