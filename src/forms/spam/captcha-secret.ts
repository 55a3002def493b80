import { SecretBox } from '../../common/crypto/secret-box';
import type { FormChallenge, FormSettings } from '../form-settings';

/**
 * A form's CAPTCHA secret (spam_protection.captcha_secret) is sealed with SecretBox in forms.settings and never
 * shown: responses carry captcha_secret_set instead. Rows written before sealing hold the plain text; they are read
 * as they are and sealed on start-up, by `reseal-secrets`, or when the form is next written.
 */

export type CaptchaProvider = 'turnstile' | 'hcaptcha';

export function isCaptchaProvider(challenge: FormChallenge | undefined): challenge is CaptchaProvider {
  return challenge === 'turnstile' || challenge === 'hcaptcha';
}

/** The secret itself, from its stored value: sealed, or the plain text of a row written before sealing. */
export function openCaptchaSecret(box: SecretBox, stored: string): string {
  return SecretBox.isSealed(stored) ? box.open(stored) : stored;
}

/**
 * Settings as they are stored: a captcha_secret given is sealed; null removes the stored one; one left out keeps
 * `stored`'s while the challenge stays the provider it was given for (a secret is one provider's, and the checker
 * asked for a new one when the provider changed).
 */
export function sealCaptchaSecret(box: SecretBox, settings: FormSettings, stored?: FormSettings): FormSettings {
  const spam = settings.spam_protection;
  if (!spam) return settings;
  const { captcha_secret: given, captcha_secret_set: _shown, ...rest } = spam;
  const kept = stored?.spam_protection;
  let sealed: string | undefined;
  if (typeof given === 'string') sealed = box.seal(given);
  else if (given === undefined && kept?.captcha_secret && isCaptchaProvider(spam.challenge) && kept.challenge === spam.challenge) {
    sealed = SecretBox.isSealed(kept.captcha_secret) ? kept.captcha_secret : box.seal(kept.captcha_secret);
  }
  return { ...settings, spam_protection: sealed === undefined ? rest : { ...rest, captcha_secret: sealed } };
}

/** Stored settings with the secret opened: what the configuration plan compares with a file's. */
export function withOpenCaptchaSecret(box: SecretBox, settings: FormSettings): FormSettings {
  const secret = settings.spam_protection?.captcha_secret;
  if (!secret) return settings;
  return { ...settings, spam_protection: { ...settings.spam_protection, captcha_secret: openCaptchaSecret(box, secret) } };
}

/** Settings as responses show them: `captcha_secret_set: true` where a secret is stored, never the secret. */
export function publicFormSettings(settings: FormSettings): FormSettings {
  const spam = settings.spam_protection;
  if (!spam || !('captcha_secret' in spam)) return settings;
  const { captcha_secret: secret, ...rest } = spam;
  return { ...settings, spam_protection: secret ? { ...rest, captcha_secret_set: true } : rest };
}

/** Stored settings without their secret: the base a change is merged over (the secret is kept apart, sealed). */
export function withoutCaptchaSecret(settings: FormSettings): FormSettings {
  const spam = settings.spam_protection;
  if (!spam || !('captcha_secret' in spam)) return settings;
  const { captcha_secret: _secret, ...rest } = spam;
  return { ...settings, spam_protection: rest };
}

/** The provider whose stored secret an update that leaves captcha_secret out keeps, if any. */
export function keptCaptchaProvider(stored: FormSettings): CaptchaProvider | undefined {
  const spam = stored.spam_protection;
  return spam?.captcha_secret && isCaptchaProvider(spam.challenge) ? spam.challenge : undefined;
}
