import { AppConfigService } from '../../config/app-config.service';
import { SecretBox, SecretBoxError } from './secret-box';

const A = 'a'.repeat(64);
const B = Buffer.alloc(32, 0xbb).toString('base64');
const C = 'c'.repeat(64);

const box = (current: string, previous?: string) =>
  new SecretBox(AppConfigService.fromEnv({ ENCRYPTION_KEY: current, ENCRYPTION_KEY_PREVIOUS: previous ?? '' }));

/** The error `run` throws; fails the test when it throws none. */
function failure(run: () => unknown): Error {
  try {
    run();
  } catch (err) {
    return err as Error;
  }
  throw new Error('no error was thrown');
}

describe('SecretBox', () => {
  const PEM = '-----BEGIN PRIVATE KEY-----\nMIIE…\n-----END PRIVATE KEY-----\n';

  it('opens what it sealed, and seals the same text differently each time', () => {
    const sealed = box(A).seal(PEM);
    expect(sealed).toMatch(/^v1\.[\w-]{16}\.[\w-]{22}\.[\w-]+$/);
    expect(box(A).open(sealed)).toBe(PEM);
    expect(box(A).seal(PEM)).not.toBe(sealed);
  });

  it('opens a value sealed under a previous key, and says it was not the current one', () => {
    const underA = box(A).seal(PEM);
    expect(box(B, A).open(underA)).toBe(PEM);
    expect(box(B, A).unseal(underA)).toEqual({ plaintext: PEM, current: false });
    expect(box(B, `${C}, ${A}`).open(underA)).toBe(PEM);
    expect(box(B, A).unseal(box(B).seal(PEM))).toEqual({ plaintext: PEM, current: true });
  });

  it('always seals with the current key: the previous one alone cannot open it', () => {
    const sealed = box(B, A).seal(PEM);
    expect(box(B).open(sealed)).toBe(PEM);
    expect(() => box(A).open(sealed)).toThrow(SecretBoxError);
  });

  it('refuses a value no configured key sealed, naming the variables and never a key', () => {
    const underC = box(C).seal(PEM);
    const withPrevious = failure(() => box(B, A).open(underC));
    expect(withPrevious).toBeInstanceOf(SecretBoxError);
    expect(withPrevious.message).toMatch(/neither ENCRYPTION_KEY nor any key in ENCRYPTION_KEY_PREVIOUS/);
    const alone = failure(() => box(A).open(underC));
    expect(alone.message).toMatch(/does not open with ENCRYPTION_KEY \(and ENCRYPTION_KEY_PREVIOUS is not set\)/);
    for (const { message } of [withPrevious, alone]) {
      for (const key of [A, B, C, 'aaaaaaaa', Buffer.from(A, 'hex').toString('base64')]) expect(message).not.toContain(key);
    }
  });

  it('refuses a tampered value and other formats', () => {
    const [version, iv, tag, ciphertext] = box(A).seal(PEM).split('.');
    const flipped = (ciphertext[0] === 'A' ? 'B' : 'A') + ciphertext.slice(1);
    expect(() => box(B, A).open([version, iv, tag, flipped].join('.'))).toThrow(SecretBoxError);
    for (const bad of ['', 'v1', `v2.${iv}.${tag}.${ciphertext}`, `v1.${iv}.${tag}`, `v1.${iv}.${tag}.${ciphertext}.x`]) {
      expect(() => box(A).open(bad)).toThrow('Unknown sealed secret format');
    }
  });

  it('tells a sealed value from plain text such as a CAPTCHA provider’s secret', () => {
    expect(SecretBox.isSealed(box(A).seal(PEM))).toBe(true);
    expect(SecretBox.isSealed(box(A).seal(''))).toBe(true);
    for (const plain of ['0x4AAAAAAABkMYinukE8nzYS_QVuXlWbAvE', 'ES_0123456789abcdef', 'v1.only.three', '', 'v1.a.b.c.d']) {
      expect(SecretBox.isSealed(plain)).toBe(false);
    }
  });

  it('re-seals under the current key only what a previous key sealed', () => {
    const underA = box(A).seal(PEM);
    const rotated = box(B, A);
    const resealed = rotated.reseal(underA)!;
    expect(resealed).not.toBeNull();
    expect(box(B).open(resealed)).toBe(PEM);
    expect(rotated.reseal(resealed)).toBeNull();
    expect(() => box(B).reseal(underA)).toThrow(SecretBoxError);
  });
});

describe('AppConfigService encryption keys', () => {
  it('lists the current key first, then each previous key once, hex and base64 alike', () => {
    const config = AppConfigService.fromEnv({ ENCRYPTION_KEY: B, ENCRYPTION_KEY_PREVIOUS: ` ${A} ,${C},${A},${B}` });
    expect(config.encryptionKeys.map((key) => key.toString('hex'))).toEqual([Buffer.from(B, 'base64').toString('hex'), A, C]);
    expect(config.previousEncryptionKeys).toHaveLength(2);
    expect(AppConfigService.fromEnv({ ENCRYPTION_KEY: A }).previousEncryptionKeys).toEqual([]);
  });

  it('derives one key per encryption key, current first, the first equal to derivedKey', () => {
    const config = AppConfigService.fromEnv({ ENCRYPTION_KEY: B, ENCRYPTION_KEY_PREVIOUS: A });
    const [current, previous] = config.derivedKeys('purpose v1');
    expect(current).toEqual(config.derivedKey('purpose v1'));
    expect(previous).toEqual(AppConfigService.fromEnv({ ENCRYPTION_KEY: A }).derivedKey('purpose v1'));
    expect(config.derivedKeys('other v1')[0]).not.toEqual(current);
  });

  it('refuses a malformed previous key without repeating it', () => {
    const secretLooking = 'f'.repeat(63);
    const { message } = failure(() => AppConfigService.fromEnv({ ENCRYPTION_KEY: A, ENCRYPTION_KEY_PREVIOUS: `${C},${secretLooking}` }));
    expect(message).toMatch(/ENCRYPTION_KEY_PREVIOUS must be a comma-separated list of keys/);
    expect(message).not.toContain(secretLooking);
    expect(message).not.toContain(C);
  });
});
