import { Inject, Injectable, Logger } from '@nestjs/common';
import { SecretBox, SecretBoxError } from '../../common/crypto/secret-box';
import { AppException } from '../../common/errors/app.exception';
import { ErrorCode } from '../../common/errors/error-code';
import { CaptchaProvider, openCaptchaSecret } from './captcha-secret';

/** The form field each provider's widget posts its token in. */
export const CAPTCHA_FIELDS: Record<CaptchaProvider, string> = {
  turnstile: 'cf-turnstile-response',
  hcaptcha: 'h-captcha-response',
};

export const CAPTCHA_VERIFY_TIMEOUT_MS = 5000;

export interface CaptchaVerifierOptions {
  turnstileVerifyUrl: string;
  hcaptchaVerifyUrl: string;
  /** Default CAPTCHA_VERIFY_TIMEOUT_MS. */
  timeoutMs?: number;
}

export const CAPTCHA_VERIFIER_OPTIONS = Symbol('CAPTCHA_VERIFIER_OPTIONS');

const PROVIDER_NAMES: Record<CaptchaProvider, string> = { turnstile: 'Turnstile', hcaptcha: 'hCaptcha' };

interface SiteverifyAnswer {
  success?: unknown;
  'error-codes'?: unknown;
}

/** Checks a Cloudflare Turnstile or hCaptcha token with the provider's siteverify API. */
@Injectable()
export class CaptchaVerifier {
  private readonly logger = new Logger(CaptchaVerifier.name);

  constructor(
    @Inject(CAPTCHA_VERIFIER_OPTIONS) private readonly options: CaptchaVerifierOptions,
    private readonly secrets: SecretBox,
  ) {}

  /**
   * Resolves when the provider confirms the token. Everything else is CHALLENGE_FAILED, the provider being
   * unreachable or broken included: a captcha that cannot be checked must not let bots through (fail closed).
   * `storedSecret` is the form's captcha_secret as stored: sealed (or plain text in a row written before sealing).
   */
  async verify(provider: CaptchaProvider, storedSecret: string, token: string | undefined, remoteIp: string): Promise<void> {
    const name = PROVIDER_NAMES[provider];
    if (!token?.trim()) throw failed(`The ${name} token (field ${CAPTCHA_FIELDS[provider]}) is missing`, { provider });

    const body = new URLSearchParams({ secret: this.secretOf(provider, storedSecret), response: token });
    if (remoteIp) body.set('remoteip', remoteIp);
    const answer = await this.siteverify(provider, body);
    if (answer?.success === true) return;
    const errorCodes = Array.isArray(answer?.['error-codes']) ? answer['error-codes'].map(String) : [];
    throw failed(`${name} rejected the token`, errorCodes.length ? { provider, errorCodes } : { provider });
  }

  private secretOf(provider: CaptchaProvider, stored: string): string {
    try {
      return openCaptchaSecret(this.secrets, stored);
    } catch (err) {
      if (!(err instanceof SecretBoxError)) throw err;
      // The operator's configuration, not the submitter's doing: logged as such, and the post still fails closed.
      this.logger.error(`A form's ${PROVIDER_NAMES[provider]} secret cannot be opened: ${err.message}`);
      throw failed(`The form's ${PROVIDER_NAMES[provider]} secret cannot be read; the token was not checked`, { provider });
    }
  }

  private async siteverify(provider: CaptchaProvider, body: URLSearchParams): Promise<SiteverifyAnswer | null> {
    const name = PROVIDER_NAMES[provider];
    const notChecked = (why: string, details: Record<string, unknown> = {}, cause?: string) => {
      this.logger.warn(`${name} siteverify ${why}${cause ? `: ${cause}` : ''}`);
      return failed(`${name} ${why}; the token was not checked`, { provider, ...details });
    };
    const url = provider === 'turnstile' ? this.options.turnstileVerifyUrl : this.options.hcaptchaVerifyUrl;
    try {
      const response = await fetch(url, {
        method: 'POST',
        body, // sent as application/x-www-form-urlencoded
        signal: AbortSignal.timeout(this.options.timeoutMs ?? CAPTCHA_VERIFY_TIMEOUT_MS),
      });
      if (!response.ok) {
        await response.body?.cancel();
        throw notChecked(`answered HTTP ${response.status}`, { status: response.status });
      }
      const text = await response.text();
      try {
        return JSON.parse(text) as SiteverifyAnswer | null;
      } catch {
        throw notChecked('answered with something other than JSON');
      }
    } catch (err) {
      if (err instanceof AppException) throw err;
      if ((err as Error).name === 'TimeoutError') throw notChecked('did not answer in time');
      const cause = (err as Error & { cause?: Error }).cause;
      throw notChecked('could not be reached', {}, cause?.message ?? (err as Error).message);
    }
  }
}

function failed(message: string, details: Record<string, unknown>): AppException {
  return new AppException(ErrorCode.ChallengeFailed, message, details);
}
