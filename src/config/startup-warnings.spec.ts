import { AppConfigService } from './app-config.service';
import { startupWarnings } from './startup-warnings';

const config = (env: Record<string, string>) =>
  AppConfigService.fromEnv({ NODE_ENV: 'test', SMTP_URL: '', FORMS_FROM: '', RETURN_PATH_DOMAIN: '', DOMAIN_SPF_INCLUDE: '', ...env });

describe('startupWarnings', () => {
  it('says what a local trial runs on: the outbox, skipped verification, and the mail defaults with what to set', () => {
    const warnings = startupWarnings(config({ PUBLIC_URL: 'http://localhost:3300', DOMAIN_VERIFICATION: 'skip' }));
    expect(warnings).toEqual([
      expect.stringMatching(/^DOMAIN_VERIFICATION=skip: /),
      expect.stringMatching(/^SMTP_URL is not set: emails are written to data\/outbox /),
      expect.stringMatching(
        /^Mail uses local defaults: notifications come from forms@mailroom\.localhost, bounces return to bounces\+…@localhost/,
      ),
    ]);
    expect(warnings[2]).toContain('"v=spf1 a:localhost ~all"');
    for (const variable of ['PUBLIC_URL', 'FORMS_FROM', 'RETURN_PATH_DOMAIN', 'DOMAIN_SPF_INCLUDE'])
      expect(warnings[2]).toContain(variable);
  });

  it('says nothing for a configuration made for real mail', () => {
    const real = config({
      PUBLIC_URL: 'https://mail.example.com',
      SMTP_URL: 'smtp://smtp.example.com:587',
      FORMS_FROM: 'forms@example.com',
      RETURN_PATH_DOMAIN: 'bounces.example.com',
      DOMAIN_SPF_INCLUDE: 'spf.provider.example',
      WORKER_PROCESSES: '3',
    });
    expect(startupWarnings(real)).toEqual([]);
  });

  it('says when the connection budgets run fewer worker threads than WORKER_PROCESSES asks for', () => {
    const tight = { PUBLIC_URL: 'https://mail.example.com', WORKER_PROCESSES: '15', DATABASE_POOL_SIZE: '20', SMTP_POOL_SIZE: '4' };
    expect(startupWarnings(config({ ...tight, SMTP_URL: 'smtp://smtp.example.com:587' }))).toEqual([
      expect.stringMatching(/^WORKER_PROCESSES=15 wants more worker threads .*SMTP_POOL_SIZE=4\): 4 run\./),
    ]);
    expect(startupWarnings(config({ ...tight, DATABASE_POOL_SIZE: '8' }))).toEqual([
      expect.stringMatching(/^WORKER_PROCESSES=15 .*\(DATABASE_POOL_SIZE=8, a share of it the HTTP thread's\): 3 run\./),
      expect.stringMatching(/^SMTP_URL is not set/),
    ]);
  });

  it('leaves the outbox out where no worker runs, and the mail defaults out for a public host', () => {
    expect(startupWarnings(config({ APP_ROLE: 'api', PUBLIC_URL: 'https://mail.example.com' }))).toEqual([]);
  });
});
