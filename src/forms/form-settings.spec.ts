import { SettingsChecker } from '../common/settings-checker';
import { ALTCHA_MAX_NUMBER, altchaMaxNumberOf, checkFormMap, checkFormSettings, FormCheckOptions } from './form-settings';

const formMap = (value: unknown, requireRecipients = false) => {
  const check = new SettingsChecker();
  const forms = checkFormMap(value, 'forms', check, { requireRecipients, reserved: ['send'] });
  return { forms, errors: check.errors };
};

describe('checkFormMap', () => {
  it('keeps a full configuration-file form and stores to as recipients', () => {
    const { forms, errors } = formMap({
      contact: {
        name: 'Contact',
        to: 'team@example.com',
        subject: 'New message from {{ form.name }}',
        replies: true,
        replyTo: 'email',
        acknowledgment: { enabled: true, template: 'contact-ack', subject: 'Thanks' },
        template: 'contact-notification',
        rateLimit: 20,
        spam_protection: { level: 'high', honeypot: '_gotcha', rate_limit: 5, content_filter: true },
        allowedOrigins: ['https://WWW.Example.org/', 'landing.example.net', '*.example.io'],
        redirect: 'https://example.com/thanks',
        rate_limiting: { per_ip: { hourly: 5 } },
      },
    });
    expect(errors).toEqual([]);
    expect(forms).toEqual({
      contact: {
        name: 'Contact',
        recipients: ['team@example.com'],
        subject: 'New message from {{ form.name }}',
        replies: true,
        replyTo: 'email',
        acknowledgment: { enabled: true, template: 'contact-ack', subject: 'Thanks' },
        template: 'contact-notification',
        rateLimit: 20,
        spam_protection: { level: 'high', honeypot: '_gotcha', rate_limit: 5, content_filter: true },
        allowedOrigins: ['https://www.example.org', 'landing.example.net', '*.example.io'],
        redirect: 'https://example.com/thanks',
        rate_limiting: { per_ip: { hourly: 5 } },
      },
    });
  });

  it('names the path of every bad value', () => {
    const { forms, errors } = formMap({
      contact: {
        to: ['ok@example.com', 'not-an-address'],
        subject: 'Line\r\nBcc: victim@example.com',
        acknowledgment: { enabled: 'yes' },
        spam_protection: { level: 'extreme' },
        rateLimit: 0,
        redirect: 'javascript:alert(1)',
        allowedOrigins: ['https://example.com/path'],
        colour: 'blue',
      },
      'Bad Slug': {},
      send: {},
    });
    expect(forms).toBeUndefined();
    expect(errors.map((e) => e.field).sort()).toEqual(
      [
        'forms.Bad Slug',
        'forms.contact.acknowledgment.enabled',
        'forms.contact.allowedOrigins[0]',
        'forms.contact.colour',
        'forms.contact.rateLimit',
        'forms.contact.redirect',
        'forms.contact.spam_protection.level',
        'forms.contact.subject',
        'forms.contact.to[1]',
        'forms.send',
      ].sort(),
    );
  });

  it('requires recipients only when asked to', () => {
    expect(formMap({ contact: { subject: 'Hi' } }).errors).toEqual([]);
    expect(formMap({ contact: { subject: 'Hi' } }, true).errors).toEqual([
      { field: 'forms.contact.recipients', message: 'recipients (or to) is required' },
    ]);
    expect(formMap({ contact: { to: 'a@example.com', recipients: ['b@example.com'] } }).errors[0].field).toBe('forms.contact.to');
  });

  it('takes acknowledgment.replyTo, an address, as the acknowledgment’s Reply-To', () => {
    expect(formMap({ contact: { acknowledgment: { enabled: true, replyTo: ' hello@example.com ' } } }).forms).toEqual({
      contact: { acknowledgment: { enabled: true, replyTo: 'hello@example.com' } },
    });
    expect(formMap({ contact: { acknowledgment: { enabled: true, replyTo: 'email' } } }).errors).toEqual([
      { field: 'forms.contact.acknowledgment.replyTo', message: 'must be an email address' },
    ]);
  });

  it('refuses a non-object and an empty recipient list', () => {
    expect(formMap(['contact']).errors).toEqual([{ field: 'forms', message: 'must be an object' }]);
    expect(formMap({ contact: { recipients: [] } }).errors[0].field).toBe('forms.contact.recipients');
  });

  it('takes ccAllowed, the addresses a post’s _cc may copy: a list of at most 50 addresses, empty for none', () => {
    expect(formMap({ contact: { ccAllowed: ['sales@example.com', ' sales@example.com'] } }).forms).toEqual({
      contact: { ccAllowed: ['sales@example.com'] },
    });
    expect(formMap({ contact: { ccAllowed: [] } }).forms).toEqual({ contact: { ccAllowed: [] } });
    expect(formMap({ contact: { ccAllowed: ['ok@example.com', 'nope'] } }).errors).toEqual([
      { field: 'forms.contact.ccAllowed[1]', message: 'not an email address: nope' },
    ]);
    const many = Array.from({ length: 51 }, (_, i) => `cc${i}@example.com`);
    expect(formMap({ contact: { ccAllowed: many } }).errors).toEqual([
      { field: 'forms.contact.ccAllowed', message: 'at most 50 addresses' },
    ]);
  });
});

describe('checkFormSettings: the CAPTCHA secret', () => {
  const spam = (value: Record<string, unknown>, options: Partial<FormCheckOptions> = {}) => {
    const check = new SettingsChecker();
    const form = checkFormSettings({ spam_protection: value }, 'settings', check, { requireRecipients: false, ...options });
    return { spam: form?.spam_protection, errors: check.errors };
  };
  const required = (provider: string) => ({
    field: 'settings.spam_protection.captcha_secret',
    message: `the ${provider} site secret is required with challenge ${provider}`,
  });

  it('requires the secret with turnstile and hcaptcha, unless a stored one of that provider is kept', () => {
    expect(spam({ challenge: 'turnstile' }).errors).toEqual([required('turnstile')]);
    expect(spam({ challenge: 'turnstile' }, { keptCaptchaSecret: 'turnstile' })).toEqual({ spam: { challenge: 'turnstile' }, errors: [] });
    // The stored secret is Turnstile's: hCaptcha needs its own.
    expect(spam({ challenge: 'hcaptcha' }, { keptCaptchaSecret: 'turnstile' }).errors).toEqual([required('hcaptcha')]);
    expect(spam({ challenge: 'hcaptcha', captcha_secret: '0x0000' }).spam).toEqual({ challenge: 'hcaptcha', captcha_secret: '0x0000' });
  });

  it('takes null as the removal of the stored secret, which a CAPTCHA challenge then lacks', () => {
    expect(spam({ challenge: 'altcha', captcha_secret: null })).toEqual({
      spam: { challenge: 'altcha', captcha_secret: null },
      errors: [],
    });
    expect(spam({ challenge: 'turnstile', captcha_secret: null }, { keptCaptchaSecret: 'turnstile' }).errors).toEqual([
      required('turnstile'),
    ]);
  });

  it('refuses a ${NAME} reference (a file mailroom push did not fill in), naming the variable', () => {
    const { spam: result, errors } = spam({ challenge: 'turnstile', captcha_secret: '${TURNSTILE_SECRET}' });
    expect(result).toBeUndefined();
    expect(errors).toEqual([
      {
        field: 'settings.spam_protection.captcha_secret',
        message: expect.stringMatching(/^is a reference to the environment variable TURNSTILE_SECRET: mailroom push replaces it/),
      },
    ]);
  });

  it('takes captcha_secret_set, what responses show, and drops it', () => {
    expect(spam({ challenge: 'turnstile', captcha_secret_set: true }, { keptCaptchaSecret: 'turnstile' })).toEqual({
      spam: { challenge: 'turnstile' },
      errors: [],
    });
    expect(spam({ captcha_secret_set: 'yes' }).errors).toEqual([
      { field: 'settings.spam_protection.captcha_secret_set', message: 'must be true or false' },
    ]);
  });
});

describe('checkFormSettings: the ALTCHA difficulty', () => {
  const check = (altcha_maxnumber: unknown) => {
    const checker = new SettingsChecker();
    const form = checkFormSettings({ spam_protection: { challenge: 'altcha', altcha_maxnumber } }, 'settings', checker, {
      requireRecipients: false,
    });
    return { form, errors: checker.errors };
  };
  const outOfRange = {
    field: 'settings.spam_protection.altcha_maxnumber',
    message: `must be a whole number from ${ALTCHA_MAX_NUMBER.min} to ${ALTCHA_MAX_NUMBER.max}`,
  };

  it('keeps a difficulty within the bounds, and defaults to one in ALTCHA’s range', () => {
    for (const value of [ALTCHA_MAX_NUMBER.min, 250_000, ALTCHA_MAX_NUMBER.max]) {
      const { form, errors } = check(value);
      expect(errors).toEqual([]);
      expect(altchaMaxNumberOf(form!)).toBe(value);
    }
    expect(altchaMaxNumberOf({})).toBe(100_000);
    expect(altchaMaxNumberOf({ spam_protection: { challenge: 'altcha' } })).toBe(100_000);
  });

  it('refuses one outside the bounds or not a whole number', () => {
    for (const value of [ALTCHA_MAX_NUMBER.min - 1, ALTCHA_MAX_NUMBER.max + 1, 0, -5, 150_000.5, '200000', null, [100_000]]) {
      expect(check(value)).toEqual({ form: undefined, errors: [outOfRange] });
    }
  });
});
