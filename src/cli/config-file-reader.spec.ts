import { resolveSecretReferences } from './config-file-reader';

const form = (secret: unknown, extra: Record<string, unknown> = {}) => ({
  to: 'team@example.com',
  subject: 'From ${NAME}',
  spam_protection: { challenge: 'turnstile', captcha_secret: secret },
  ...extra,
});

describe('resolveSecretReferences', () => {
  it('replaces each form’s captcha_secret reference by the variable, and nothing else', () => {
    const file = {
      domains: { 'example.com': { forms: { contact: form('${TURNSTILE_SECRET}') } } },
      collections: { site: { forms: { news: form('${HCAPTCHA_SECRET}') } } },
      templates: { t: { subject: 's', html: '<script>let a = `${NAME}`</script>' } },
    };
    resolveSecretReferences(file, { TURNSTILE_SECRET: '0x4AAA-t', HCAPTCHA_SECRET: '0x0000-h', NAME: 'never used' });
    expect(file.domains['example.com'].forms.contact).toEqual(form('0x4AAA-t'));
    expect(file.collections.site.forms.news.spam_protection.captcha_secret).toBe('0x0000-h');
    expect(file.templates.t.html).toBe('<script>let a = `${NAME}`</script>');
  });

  it('leaves a secret written in the file as it is', () => {
    const file = { domains: { 'example.com': { forms: { contact: form('0x4AAA-literal') } } } };
    resolveSecretReferences(file, {});
    expect(file.domains['example.com'].forms.contact.spam_protection.captcha_secret).toBe('0x4AAA-literal');
  });

  it('names every variable that is not set, or empty, with where the file uses it', () => {
    const file = {
      domains: { 'example.com': { forms: { contact: form('${TURNSTILE_SECRET}') } } },
      collections: { site: { forms: { news: form('${SITE_SECRET}') } } },
    };
    expect(() => resolveSecretReferences(file, { SITE_SECRET: '' })).toThrow(
      'The file refers to environment variables that are not set: ' +
        'TURNSTILE_SECRET (domains.example.com.forms.contact.spam_protection.captcha_secret), ' +
        'SITE_SECRET (collections.site.forms.news.spam_protection.captcha_secret). ' +
        'Set them (the secrets themselves) where mailroom runs; nothing was sent.',
    );
  });

  it('passes over sections of other shapes, for the server to name', () => {
    const file = { domains: ['example.com'], collections: { site: null, other: { forms: { f: 'x' } } } };
    expect(() => resolveSecretReferences(file, {})).not.toThrow();
  });
});
