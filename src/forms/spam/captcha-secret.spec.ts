import { SecretBox } from '../../common/crypto/secret-box';
import { AppConfigService } from '../../config/app-config.service';
import type { FormSettings } from '../form-settings';
import {
  keptCaptchaProvider,
  openCaptchaSecret,
  publicFormSettings,
  sealCaptchaSecret,
  withOpenCaptchaSecret,
  withoutCaptchaSecret,
} from './captcha-secret';

const box = new SecretBox(AppConfigService.fromEnv({ ENCRYPTION_KEY: 'a'.repeat(64), ENCRYPTION_KEY_PREVIOUS: '' }));
const SECRET = '0x4AAAAAAAturnstile-secret';

const turnstile = (captcha_secret?: string | null): FormSettings => ({
  name: 'Contact',
  spam_protection: { challenge: 'turnstile', ...(captcha_secret !== undefined && { captcha_secret }) },
});

describe('sealCaptchaSecret', () => {
  it('seals a secret given, so that the stored settings hold no plain text', () => {
    const stored = sealCaptchaSecret(box, turnstile(SECRET));
    const sealed = stored.spam_protection!.captcha_secret!;
    expect(SecretBox.isSealed(sealed)).toBe(true);
    expect(JSON.stringify(stored)).not.toContain(SECRET);
    expect(box.open(sealed)).toBe(SECRET);
    expect(stored.name).toBe('Contact');
  });

  it('keeps the stored secret when the change leaves it out and the provider is the same', () => {
    const stored = sealCaptchaSecret(box, turnstile(SECRET));
    expect(sealCaptchaSecret(box, turnstile(), stored)).toEqual(stored);
    const hcaptcha: FormSettings = { spam_protection: { challenge: 'hcaptcha' } };
    expect(sealCaptchaSecret(box, hcaptcha, stored).spam_protection).toEqual({ challenge: 'hcaptcha' });
    expect(sealCaptchaSecret(box, { spam_protection: { level: 'low' } }, stored).spam_protection).toEqual({ level: 'low' });
  });

  it('removes it on null, replaces it with a new one, and drops captcha_secret_set', () => {
    const stored = sealCaptchaSecret(box, turnstile(SECRET));
    expect(sealCaptchaSecret(box, { spam_protection: { challenge: 'altcha', captcha_secret: null } }, stored).spam_protection).toEqual({
      challenge: 'altcha',
    });
    const replaced = sealCaptchaSecret(box, turnstile('0x4AAAAAAAother'), stored);
    expect(box.open(replaced.spam_protection!.captcha_secret!)).toBe('0x4AAAAAAAother');
    const shown = { spam_protection: { challenge: 'turnstile' as const, captcha_secret_set: true } };
    expect(sealCaptchaSecret(box, shown, stored)).toEqual({ spam_protection: stored.spam_protection });
  });

  it('seals a plain-text secret of a row written before sealing when it keeps it', () => {
    const kept = sealCaptchaSecret(box, turnstile(), turnstile(SECRET));
    expect(box.open(kept.spam_protection!.captcha_secret!)).toBe(SECRET);
  });
});

describe('reading a stored secret', () => {
  const stored = sealCaptchaSecret(box, turnstile(SECRET));

  it('opens a sealed one, and takes a plain one as it is', () => {
    expect(openCaptchaSecret(box, stored.spam_protection!.captcha_secret!)).toBe(SECRET);
    expect(openCaptchaSecret(box, SECRET)).toBe(SECRET);
    expect(withOpenCaptchaSecret(box, stored)).toEqual(turnstile(SECRET));
    expect(withOpenCaptchaSecret(box, { name: 'x' })).toEqual({ name: 'x' });
  });

  it('shows captcha_secret_set instead of the secret, and nothing when there is none', () => {
    expect(publicFormSettings(stored)).toEqual({ name: 'Contact', spam_protection: { challenge: 'turnstile', captcha_secret_set: true } });
    expect(publicFormSettings({ spam_protection: { level: 'low' } })).toEqual({ spam_protection: { level: 'low' } });
    expect(withoutCaptchaSecret(stored)).toEqual(turnstile());
  });

  it('names the provider whose secret a change may keep', () => {
    expect(keptCaptchaProvider(stored)).toBe('turnstile');
    expect(keptCaptchaProvider(turnstile())).toBeUndefined();
    expect(keptCaptchaProvider({ spam_protection: { challenge: 'altcha', captcha_secret: 'left over' } })).toBeUndefined();
  });
});
