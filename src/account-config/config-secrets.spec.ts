import { AccountConfig, checkConfigFile, toConfigFile } from './config-file';
import { mergeConfig, planChanges } from './config-plan';
import { redactSecrets, secretVariables, withSecretReferences } from './config-secrets';

function config(file: unknown): AccountConfig {
  const { config, errors } = checkConfigFile(file);
  expect(errors).toEqual([]);
  return config;
}

const turnstile = (secret: string) => ({ to: 't@example.org', spam_protection: { challenge: 'turnstile', captcha_secret: secret } });
const hcaptcha = (secret: string) => ({ to: 't@example.org', spam_protection: { challenge: 'hcaptcha', captcha_secret: secret } });

describe('secretVariables', () => {
  it('names one variable per provider when its forms share the secret', () => {
    const account = config({
      domains: { 'a.example': { forms: { contact: turnstile('T1'), quote: turnstile('T1'), help: hcaptcha('H1') } } },
      collections: { site: { forms: { news: turnstile('T1') } } },
    });
    expect(Object.fromEntries(secretVariables(account))).toEqual({
      'domains.a.example.forms.contact': 'TURNSTILE_SECRET',
      'domains.a.example.forms.quote': 'TURNSTILE_SECRET',
      'domains.a.example.forms.help': 'HCAPTCHA_SECRET',
      'collections.site.forms.news': 'TURNSTILE_SECRET',
    });
  });

  it('names one variable per form when a provider’s secrets differ, numbering names two owners share', () => {
    const account = config({
      domains: {
        'a-b.example': { forms: { contact: turnstile('T1') } },
        'a.b.example': { forms: { contact: turnstile('T2') } },
      },
      collections: { 'my-site': { forms: { 'sign-up': turnstile('T3') } } },
    });
    expect(Object.fromEntries(secretVariables(account))).toEqual({
      'domains.a-b.example.forms.contact': 'TURNSTILE_SECRET_A_B_EXAMPLE_CONTACT',
      'domains.a.b.example.forms.contact': 'TURNSTILE_SECRET_A_B_EXAMPLE_CONTACT_2',
      'collections.my-site.forms.sign-up': 'TURNSTILE_SECRET_MY_SITE_SIGN_UP',
    });
  });
});

describe('withSecretReferences', () => {
  it('exports each secret as its ${NAME} and nothing else differently', () => {
    const account = config({ domains: { 'a.example': { forms: { contact: turnstile('T1'), plain: { to: 'p@example.org' } } } } });
    const file = toConfigFile(withSecretReferences(account));
    expect(file).toEqual({
      domains: {
        'a.example': {
          forms: {
            contact: { to: 't@example.org', spam_protection: { challenge: 'turnstile', captcha_secret: '${TURNSTILE_SECRET}' } },
            plain: { to: 'p@example.org' },
          },
        },
      },
    });
    expect(JSON.stringify(file)).not.toContain('T1');
    // The account's own config is left as it was.
    expect(account.domains['a.example'].forms.contact.spam_protection!.captcha_secret).toBe('T1');
  });
});

describe('redactSecrets', () => {
  const current = config({ domains: { 'a.example': { forms: { contact: turnstile('T1') } } } });
  const plan = (file: unknown) => planChanges(...redactSecrets(current, mergeConfig(current, config(file), false)));

  it('plans nothing when the file’s secret is the stored one', () => {
    expect(plan({ domains: { 'a.example': { forms: { contact: turnstile('T1') } } } })).toEqual([]);
  });

  it('shows a changed secret as an update without either value', () => {
    const changes = plan({ domains: { 'a.example': { forms: { contact: turnstile('T2') } } } });
    expect(changes).toEqual([
      {
        action: 'update',
        kind: 'form',
        path: 'domains.a.example.forms.contact',
        changes: [
          {
            field: 'spam_protection',
            before: { challenge: 'turnstile', captcha_secret: '(secret)' },
            after: { challenge: 'turnstile', captcha_secret: '(new secret)' },
          },
        ],
      },
    ]);
    expect(JSON.stringify(changes)).not.toMatch(/T1|T2/);
  });

  it('shows a new form’s secret as set', () => {
    const changes = plan({ domains: { 'a.example': { forms: { other: hcaptcha('H1') } } } });
    expect(changes).toHaveLength(1);
    expect(changes[0].changes.find((c) => c.field === 'spam_protection')!.after).toEqual({
      challenge: 'hcaptcha',
      captcha_secret: '(secret)',
    });
  });
});
