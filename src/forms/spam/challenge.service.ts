import { createHmac } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';
import { createChallenge, extractParams, verifySolution, type Payload } from 'altcha-lib/v1';
import { AppException } from '../../common/errors/app.exception';
import { ErrorCode } from '../../common/errors/error-code';
import { AppConfigService } from '../../config/app-config.service';
import { RedisService } from '../../redis/redis.service';
import type { Form } from '../form.entity';
import { altchaMaxNumberOf } from '../form-settings';
import { ChallengeDto } from './challenge.dto';

/** The form field the ALTCHA widget posts its solution in: base64 of a JSON `Payload`. */
export const ALTCHA_FIELD = 'altcha';
export const CHALLENGE_TTL_MS = 10 * 60_000;
const ALGORITHM = 'SHA-256';
/** A real payload is about 400 characters; anything far longer is not one. */
const MAX_PAYLOAD_LENGTH = 4096;
const REPLAY_CHECK_TIMEOUT_MS = 500;

/** What a challenge is made for: the form, whose settings give its difficulty. */
export type ChallengedForm = Pick<Form, 'id' | 'settings'>;

/** The built-in proof-of-work challenge (ALTCHA, altcha-lib's classic API): issued per form, single use. */
@Injectable()
export class ChallengeService {
  private readonly logger = new Logger(ChallengeService.name);
  /** One per key of `config.encryptionKeys`, current first: it signs every challenge; the others only verify. */
  private readonly hmacKeys: string[];

  constructor(
    config: AppConfigService,
    private readonly redis: RedisService,
  ) {
    // A key for this purpose only, from each encryption key (the same list derivedKeys maps over). It keeps the
    // derivation it had before derivedKeys existed, so that challenges already open in browsers survive an upgrade.
    this.hmacKeys = config.encryptionKeys.map((key) => createHmac('sha256', key).update('altcha-challenge').digest('hex'));
  }

  /** A challenge for the form's widget, as hard as the form asks. The form id, difficulty and expiry ride in the signed salt. */
  async create(form: ChallengedForm, ttlMs: number = CHALLENGE_TTL_MS): Promise<ChallengeDto> {
    const maxnumber = altchaMaxNumberOf(form.settings);
    const challenge = await createChallenge({
      algorithm: ALGORITHM,
      hmacKey: this.hmacKeys[0],
      maxnumber,
      expires: new Date(Date.now() + ttlMs),
      params: { formId: form.id, maxnumber: String(maxnumber) },
    });
    return { ...challenge, maxnumber };
  }

  /**
   * Accepts a solution of a challenge this server issued for this form, at no less than the form's difficulty now
   * (raising it shuts out challenges fetched ahead), once, before it expires.
   */
  async verify(form: ChallengedForm, payload: string | undefined): Promise<void> {
    if (!payload?.trim()) throw failed(`The challenge solution (field ${ALTCHA_FIELD}) is missing`);
    const solution = parsePayload(payload);
    if (!solution) throw failed('The challenge solution is malformed');
    // The salt, and with it formId and expires, is covered by the signature: check it first, then trust them.
    if (!(await this.signedByUs(solution))) throw failed('The challenge solution is wrong');
    const params = extractParams(solution);
    if (params.formId !== form.id) throw failed('The challenge was issued for another form');
    // Challenges issued before the difficulty rode in the salt expire within CHALLENGE_TTL_MS of an upgrade.
    if (params.maxnumber !== undefined && !(Number(params.maxnumber) >= altchaMaxNumberOf(form.settings))) {
      throw failed('The challenge is easier than the form now asks; fetch a new one');
    }
    const expiresAt = Number(params.expires) * 1000;
    if (!(expiresAt > Date.now())) throw failed('The challenge has expired');
    if (!(await this.claim(solution.signature, expiresAt - Date.now()))) throw failed('The challenge was already used');
  }

  /** A solution of a challenge signed with any of our keys: those made before a key rotation still verify. */
  private async signedByUs(solution: Payload): Promise<boolean> {
    for (const key of this.hmacKeys) if (await verifySolution(solution, key, false)) return true;
    return false;
  }

  /**
   * Marks the challenge used until it expires; false when it already was. When Redis fails or does not
   * answer quickly, the solution is accepted without the replay check: a replay then costs one more
   * submission per solved challenge, whereas refusing would turn away every protected form while Redis is down.
   */
  private async claim(signature: string, ttlMs: number): Promise<boolean> {
    const claim = await this.redis.claim(this.redis.key('altcha', 'used', signature), ttlMs, REPLAY_CHECK_TIMEOUT_MS);
    if (claim.state === 'unknown') this.logger.warn(`Challenge replay check skipped: ${claim.reason}`);
    return claim.state !== 'taken';
  }
}

function failed(message: string): AppException {
  return new AppException(ErrorCode.ChallengeFailed, message);
}

const isHex = (value: unknown): value is string => typeof value === 'string' && /^[0-9a-f]{1,128}$/.test(value);

/** The widget's payload, or null when it is not base64 JSON of the expected shape. */
function parsePayload(payload: string): Payload | null {
  if (payload.length > MAX_PAYLOAD_LENGTH) return null;
  let value: Partial<Payload> | null;
  try {
    value = JSON.parse(Buffer.from(payload, 'base64').toString('utf8')) as Partial<Payload> | null;
  } catch {
    return null;
  }
  if (
    typeof value !== 'object' ||
    value === null ||
    value.algorithm !== ALGORITHM ||
    !isHex(value.challenge) ||
    !isHex(value.signature) ||
    typeof value.salt !== 'string' ||
    !Number.isSafeInteger(value.number) ||
    (value.number as number) < 0
  ) {
    return null;
  }
  return {
    algorithm: value.algorithm,
    challenge: value.challenge,
    number: value.number as number,
    salt: value.salt,
    signature: value.signature,
  };
}
