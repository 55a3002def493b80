import { createHmac, randomBytes } from 'node:crypto';
import { AddressInfo, createServer } from 'node:net';
import { createChallenge, solveChallenge } from 'altcha-lib/v1';
import { ErrorCode } from '../../common/errors/error-code';
import { AppConfigService } from '../../config/app-config.service';
import { RedisService } from '../../redis/redis.service';
import { ALTCHA_MAX_NUMBER } from '../form-settings';
import type { ChallengeDto } from './challenge.dto';
import { CHALLENGE_TTL_MS, ChallengedForm, ChallengeService } from './challenge.service';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** What the ALTCHA widget posts: base64 of the challenge with the number it found. */
async function solve(challenge: ChallengeDto, number?: number): Promise<string> {
  const solution = await solveChallenge(challenge.challenge, challenge.salt, challenge.algorithm, challenge.maxnumber).promise;
  if (!solution) throw new Error('no solution found');
  const { algorithm, salt, signature } = challenge;
  return encode({ algorithm, challenge: challenge.challenge, number: number ?? solution.number, salt, signature, took: solution.took });
}

const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64');

const withDifficulty = (altcha_maxnumber: number, id = 'form_1'): ChallengedForm => ({
  id,
  settings: { spam_protection: { altcha_maxnumber } },
});
// The easiest difficulty keeps the solving in these tests quick.
const form1 = withDifficulty(ALTCHA_MAX_NUMBER.min);
const form2 = withDifficulty(ALTCHA_MAX_NUMBER.min, 'form_2');

const rejection = (pattern: RegExp) => ({ code: ErrorCode.ChallengeFailed, status: 400, message: expect.stringMatching(pattern) });

describe('ChallengeService', () => {
  const prefix = `mailroom-unit:${randomBytes(4).toString('hex')}:`;
  const config = AppConfigService.fromEnv({ NODE_ENV: 'test', REDIS_URL, REDIS_KEY_PREFIX: prefix });
  const redis = new RedisService(config);
  const service = new ChallengeService(config, redis);

  afterAll(async () => {
    const keys = await redis.client.keys(`${prefix}*`);
    if (keys.length) await redis.client.del(...keys);
    await redis.onApplicationShutdown();
  });

  it('issues a SHA-256 challenge bound to the form and its difficulty, expiring in 10 minutes', async () => {
    const before = Math.floor(Date.now() / 1000);
    const challenge = await service.create({ id: 'form_1', settings: {} });
    expect(challenge).toEqual({
      algorithm: 'SHA-256',
      challenge: expect.stringMatching(/^[0-9a-f]{64}$/),
      maxnumber: ALTCHA_MAX_NUMBER.default,
      salt: expect.stringMatching(new RegExp(`^[0-9a-f]{24}\\?formId=form_1&maxnumber=${ALTCHA_MAX_NUMBER.default}&expires=\\d+&$`)),
      signature: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    const expires = Number(/expires=(\d+)/.exec(challenge.salt)?.[1]);
    expect(expires - before).toBeGreaterThanOrEqual(CHALLENGE_TTL_MS / 1000 - 1);
    expect(expires - before).toBeLessThanOrEqual(CHALLENGE_TTL_MS / 1000 + 1);
  });

  it('accepts a real solution once and remembers it until the challenge expires', async () => {
    const challenge = await service.create(form1);
    const payload = await solve(challenge);
    await expect(service.verify(form1, payload)).resolves.toBeUndefined();

    const ttl = await redis.client.pttl(redis.key('altcha', 'used', challenge.signature));
    expect(ttl).toBeGreaterThan(CHALLENGE_TTL_MS - 60_000);
    expect(ttl).toBeLessThanOrEqual(CHALLENGE_TTL_MS);

    await expect(service.verify(form1, payload)).rejects.toMatchObject(rejection(/already used/));
  });

  it('refuses a wrong number', async () => {
    const challenge = await service.create(form1);
    const solved = JSON.parse(Buffer.from(await solve(challenge), 'base64').toString());
    const wrong = encode({ ...solved, number: (solved.number + 1) % ALTCHA_MAX_NUMBER.min });
    await expect(service.verify(form1, wrong)).rejects.toMatchObject(rejection(/wrong/));
    // The refused attempt did not use the challenge up.
    await expect(service.verify(form1, encode(solved))).resolves.toBeUndefined();
  });

  it('refuses a solution for another form', async () => {
    const payload = await solve(await service.create(form1));
    await expect(service.verify(form2, payload)).rejects.toMatchObject(rejection(/another form/));
  });

  it('refuses a salt edited to name another form', async () => {
    const solved = JSON.parse(Buffer.from(await solve(await service.create(form1)), 'base64').toString());
    const edited = encode({ ...solved, salt: solved.salt.replace('formId=form_1', 'formId=form_2') });
    await expect(service.verify(form2, edited)).rejects.toMatchObject(rejection(/wrong/));
  });

  it('issues and verifies at the difficulty the form sets', async () => {
    const challenge = await service.create(withDifficulty(20_000));
    expect(challenge.maxnumber).toBe(20_000);
    expect(challenge.salt).toContain('&maxnumber=20000&');
    await expect(service.verify(withDifficulty(20_000), await solve(challenge))).resolves.toBeUndefined();
  });

  it('refuses a challenge issued at a lower difficulty than the form now sets, and takes a higher one', async () => {
    const easy = await solve(await service.create(withDifficulty(20_000)));
    await expect(service.verify(withDifficulty(40_000), easy)).rejects.toMatchObject(rejection(/easier than the form now asks/));
    const hard = await solve(await service.create(withDifficulty(40_000)));
    await expect(service.verify(withDifficulty(20_000), hard)).resolves.toBeUndefined();
  });

  it('refuses a salt edited to claim a higher difficulty', async () => {
    const solved = JSON.parse(Buffer.from(await solve(await service.create(withDifficulty(20_000))), 'base64').toString());
    const edited = encode({ ...solved, salt: solved.salt.replace('maxnumber=20000', 'maxnumber=40000') });
    await expect(service.verify(withDifficulty(40_000), edited)).rejects.toMatchObject(rejection(/wrong/));
  });

  it('accepts a challenge issued before the difficulty rode in the salt (until it expires)', async () => {
    const hmacKey = createHmac('sha256', config.encryptionKeys[0]).update('altcha-challenge').digest('hex');
    const legacy = await createChallenge({
      algorithm: 'SHA-256',
      hmacKey,
      maxnumber: 50_000,
      expires: new Date(Date.now() + CHALLENGE_TTL_MS),
      params: { formId: 'form_1' },
    });
    await expect(service.verify(form1, await solve({ ...legacy, maxnumber: 50_000 }))).resolves.toBeUndefined();
  });

  it('refuses an expired challenge', async () => {
    const challenge = await service.create(form1, 1);
    const payload = await solve(challenge);
    await new Promise((resolve) => setTimeout(resolve, 5));
    await expect(service.verify(form1, payload)).rejects.toMatchObject(rejection(/expired/));
  });

  it('refuses a challenge signed with another key', async () => {
    const otherConfig = AppConfigService.fromEnv({ NODE_ENV: 'test', REDIS_URL, ENCRYPTION_KEY: 'ab'.repeat(32) });
    const otherRedis = new RedisService(otherConfig);
    try {
      const payload = await solve(await new ChallengeService(otherConfig, otherRedis).create(form1));
      await expect(service.verify(form1, payload)).rejects.toMatchObject(rejection(/wrong/));
    } finally {
      await otherRedis.onApplicationShutdown();
    }
  });

  it('accepts a challenge signed under a previous key (ENCRYPTION_KEY_PREVIOUS) and signs new ones with the current key only', async () => {
    const [oldKey, newKey, unknownKey] = ['ab', 'cd', 'ef'].map((hex) => hex.repeat(32));
    const env = { NODE_ENV: 'test', REDIS_URL, REDIS_KEY_PREFIX: prefix };
    const before = new ChallengeService(AppConfigService.fromEnv({ ...env, ENCRYPTION_KEY: oldKey }), redis);
    const during = new ChallengeService(
      AppConfigService.fromEnv({ ...env, ENCRYPTION_KEY: newKey, ENCRYPTION_KEY_PREVIOUS: oldKey }),
      redis,
    );
    const unknown = new ChallengeService(AppConfigService.fromEnv({ ...env, ENCRYPTION_KEY: unknownKey }), redis);

    await expect(during.verify(form1, await solve(await before.create(form1)))).resolves.toBeUndefined();
    await expect(during.verify(form1, await solve(await unknown.create(form1)))).rejects.toMatchObject(rejection(/wrong/));
    const fresh = await solve(await during.create(form1));
    await expect(before.verify(form1, fresh)).rejects.toMatchObject(rejection(/wrong/));
    const after = new ChallengeService(AppConfigService.fromEnv({ ...env, ENCRYPTION_KEY: newKey }), redis);
    await expect(after.verify(form1, fresh)).resolves.toBeUndefined();
  });

  it.each([
    ['no field', undefined, /missing/],
    ['an empty field', '  ', /missing/],
    ['not base64 JSON', 'hello world!', /malformed/],
    ['JSON of another shape', encode({ hello: 'world' }), /malformed/],
    ['an algorithm never issued', encode({ algorithm: 'MD5', challenge: 'ab', number: 1, salt: 'x', signature: 'cd' }), /malformed/],
    ['a non-integer number', encode({ algorithm: 'SHA-256', challenge: 'ab', number: '1', salt: 'x', signature: 'cd' }), /malformed/],
    ['an oversized field', 'A'.repeat(10_000), /malformed/],
  ])('refuses %s', async (_label, payload, pattern) => {
    await expect(service.verify(form1, payload)).rejects.toMatchObject(rejection(pattern));
  });

  it('accepts without the replay check when Redis does not answer', async () => {
    // Answers the connection handshake like Redis, then never answers a command: a hung server.
    const silent = createServer((socket) =>
      socket.on('data', (data) => {
        for (const [, command] of data.toString().matchAll(/\*\d+\r\n\$\d+\r\n(\w+)/g)) {
          if (/^client$/i.test(command)) socket.write('+OK\r\n');
          if (/^info$/i.test(command)) socket.write('$9\r\nloading:0\r\n');
        }
      }),
    );
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const silentConfig = AppConfigService.fromEnv({
      NODE_ENV: 'test',
      REDIS_URL: `redis://127.0.0.1:${(silent.address() as AddressInfo).port}`,
    });
    const silentRedis = new RedisService(silentConfig);
    try {
      const hung = new ChallengeService(silentConfig, silentRedis);
      const payload = await solve(await hung.create(form1));
      const started = Date.now();
      await expect(hung.verify(form1, payload)).resolves.toBeUndefined();
      await expect(hung.verify(form1, payload)).resolves.toBeUndefined();
      expect(Date.now() - started).toBeLessThan(2000);
    } finally {
      silentRedis.client.disconnect();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });
});
