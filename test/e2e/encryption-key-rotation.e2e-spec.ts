import { randomBytes } from 'node:crypto';
import { dkimVerify } from 'mailauth';
import { Webhook } from 'standardwebhooks';
import { DataSource } from 'typeorm';
import { runCli } from '../support/cli';
import { bearer, createAccount } from '../support/factories';
import { ReceivedMail, SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';
import {
  cloneTemplateDatabase,
  databaseUrl,
  dropDatabase,
  redisPrefixOfRun,
  shortRandom,
  TEST_REDIS_URL,
  testRunId,
} from '../support/test-env';
import { waitForValue } from '../support/wait-for';
import { type ReceivedHook, startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver';

const PUBLIC_URL = 'http://mailroom.test';

interface HookBody {
  type?: string;
  messageId?: string;
}

const mailroom = runCli;

/**
 * Rotating ENCRYPTION_KEY as an operator does it: the app runs under key A; restarts with ENCRYPTION_KEY=B and
 * ENCRYPTION_KEY_PREVIOUS=A; `reseal-secrets` re-seals the stored secrets; the app restarts with B alone. DKIM keys and
 * webhook secrets made under A keep signing throughout, and links in mail sent under A work while A is a previous key.
 */
describe('rotating ENCRYPTION_KEY', () => {
  const keyA = randomBytes(32).toString('hex');
  const keyB = randomBytes(32).toString('base64');
  const domain = `${shortRandom()}.rotation.test`;
  let databaseName: string;
  let sink: SmtpSink;
  let receiver: WebhookReceiver<HookBody>;
  let hooksUrl: string;
  let redisPrefix: string;
  let t: TestApp | undefined;

  let adminKey: string;
  let dkimRecord: { name: string; value: string };
  /** The webhook's secret before its rotation (still signing for 24 h) and after it. */
  let oldSecret: string;
  let newSecret: string;
  /** The links of an email sent under key A. */
  let unsubscribePath: string;
  let clickPath: string;

  /** Starts the app on the test database with these keys (every other variable the same each time). */
  async function start(keys: { ENCRYPTION_KEY: string; ENCRYPTION_KEY_PREVIOUS?: string }): Promise<TestApp> {
    await t?.close();
    t = await createTestApp({
      stores: { databaseUrl: databaseUrl(databaseName), redisUrl: TEST_REDIS_URL },
      env: {
        ENCRYPTION_KEY_PREVIOUS: '',
        ...keys,
        REDIS_KEY_PREFIX: redisPrefix,
        PUBLIC_URL,
        SMTP_URL: sink.url,
        DOMAIN_VERIFICATION: 'skip',
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
        WEBHOOK_POLL_INTERVAL_MS: '50',
      },
    });
    return t;
  }

  beforeAll(async () => {
    databaseName = await cloneTemplateDatabase();
    redisPrefix = `${redisPrefixOfRun(testRunId())}${shortRandom()}:`;
    sink = await startSmtpSink();
    receiver = await startWebhookReceiver<HookBody>();
    hooksUrl = `${receiver.base}/hooks`;
  });

  afterAll(async () => {
    await t?.close();
    await sink.close();
    await receiver.close();
    await dropDatabase(databaseName);
  });

  /** Sends a tracked email from the domain; answers the email as the provider got it and the `sent` webhook for it. */
  async function deliver(app: TestApp): Promise<{ mail: ReceivedMail; hook: ReceivedHook<HookBody> }> {
    const subject = `rotation ${shortRandom()}`;
    const res = await app.http
      .post('/email/send')
      .set(bearer(adminKey))
      .send({
        from: `news@${domain}`,
        to: 'ada@example.org',
        subject,
        html: '<p>Hello</p><a href="https://shop.example.org/sale">Sale</a>',
        tracking: { clicks: true, unsubscribe: true },
      })
      .expect(200);
    const mail = await sink.waitFor((m) => m.parsed?.subject === subject);
    const hook = await waitForValue('the sent webhook', () =>
      receiver.received.find((h) => h.body.type === 'sent' && h.body.messageId === res.body.messageId),
    );
    return { mail, hook };
  }

  /** The DKIM verdict of an email against the record the domain's owner published (from POST /domains). */
  async function dkimOf(mail: ReceivedMail): Promise<string[][]> {
    const resolver = (name: string, type: string): Promise<string[][]> =>
      type === 'TXT' && name.toLowerCase() === dkimRecord.name
        ? Promise.resolve([[dkimRecord.value]])
        : Promise.reject(Object.assign(new Error(`no ${type} record for ${name}`), { code: 'ENOTFOUND' }));
    const result = await dkimVerify(mail.raw, { resolver });
    return result.results.map((r) => [r.signingDomain, r.status.result]);
  }

  /** Which of the webhook's secrets signed the delivery (Standard Webhooks, as a receiver checks it). */
  function signedWith(hook: ReceivedHook<HookBody>): string[] {
    return Object.entries({ oldSecret, newSecret })
      .filter(([, secret]) => {
        try {
          new Webhook(secret).verify(hook.raw, hook.headers as Record<string, string>);
          return true;
        } catch {
          return false;
        }
      })
      .map(([name]) => name);
  }

  const sealedValues = () =>
    t!.app
      .get(DataSource)
      .query(`SELECT d.dkim_private_key, w.secret, w.previous_secret FROM domains d, webhooks w WHERE d.name = $1`, [domain]);

  /** The path of the email's unsubscribe link (List-Unsubscribe, unfolded) and of its tracked click link. */
  function linksOf(mail: ReceivedMail): { unsubscribe: string; click: string } {
    const head = mail.raw
      .toString('utf8')
      .split(/\r?\n\r?\n/)[0]
      .replace(/\r?\n[ \t]+/g, ' ');
    const unsubscribe = /^List-Unsubscribe:\s*<([^>]+)>/im.exec(head)?.[1];
    const click = /href="([^"]+\/t\/c\/[^"]+)"/.exec(mail.parsed!.html as string)?.[1];
    for (const url of [unsubscribe, click]) expect(url?.startsWith(`${PUBLIC_URL}/`)).toBe(true);
    return { unsubscribe: unsubscribe!.slice(PUBLIC_URL.length), click: click!.slice(PUBLIC_URL.length) };
  }

  it('under key A: a domain with its DKIM key, a webhook whose secret was rotated, a tracked email', async () => {
    const app = await start({ ENCRYPTION_KEY: keyA });
    ({ adminKey } = await createAccount(app, 'Rotation'));
    const added = await app.http.post('/domains').set(bearer(adminKey)).send({ domain }).expect(201);
    expect(added.body.status).toBe('verified');
    dkimRecord = added.body.dnsRecords.find((r: { purpose: string }) => r.purpose === 'dkim');

    const webhook = await app.http
      .post('/email/webhooks')
      .set(bearer(adminKey))
      .send({ url: hooksUrl, events: ['sent'] })
      .expect(201);
    oldSecret = webhook.body.secret;
    newSecret = (await app.http.post(`/email/webhooks/${webhook.body.id}/rotate-secret`).set(bearer(adminKey)).expect(200)).body.secret;

    const { mail, hook } = await deliver(app);
    expect(await dkimOf(mail)).toEqual([[domain, 'pass']]);
    expect(signedWith(hook)).toEqual(['oldSecret', 'newSecret']);
    ({ unsubscribe: unsubscribePath, click: clickPath } = linksOf(mail));
    await app.http.get(clickPath).expect(302).expect('Location', 'https://shop.example.org/sale');
  });

  it('restarted with ENCRYPTION_KEY=B and ENCRYPTION_KEY_PREVIOUS=A: still signs with the same keys; old links work', async () => {
    const app = await start({ ENCRYPTION_KEY: keyB, ENCRYPTION_KEY_PREVIOUS: keyA });
    const { mail, hook } = await deliver(app);
    expect(await dkimOf(mail)).toEqual([[domain, 'pass']]);
    expect(signedWith(hook)).toEqual(['oldSecret', 'newSecret']);

    await app.http.get(clickPath).expect(302).expect('Location', 'https://shop.example.org/sale');
    const page = await app.http.get(unsubscribePath).set('Accept', 'text/html').expect(200);
    expect(page.text).toContain('ada@example.org');
    // The links of this email are made with B, and work too.
    const links = linksOf(mail);
    expect(links.unsubscribe).not.toBe(unsubscribePath);
    await app.http.get(links.click).expect(302).expect('Location', 'https://shop.example.org/sale');
  });

  it('reseal-secrets refuses, changing nothing, when a value opens with none of the keys, and --dry-run only counts', async () => {
    const before = await sealedValues();
    const database = { DATABASE_URL: databaseUrl(databaseName) };

    const withoutPrevious = await mailroom(['reseal-secrets'], { ...database, ENCRYPTION_KEY: keyB });
    expect(withoutPrevious.code).toBe(1);
    expect(withoutPrevious.stdout).toBe('');
    expect(withoutPrevious.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(
        /^3 sealed values \(DKIM private key of dom_\w+, webhook secret of whk_\w+, previous webhook secret of whk_\w+\) open with neither ENCRYPTION_KEY nor any key in ENCRYPTION_KEY_PREVIOUS: .* Nothing was changed\.$/,
      ),
    ]);
    for (const key of [keyA, keyB]) expect(withoutPrevious.stderr).not.toContain(key);

    const dryRun = await mailroom(['reseal-secrets', '--dry-run'], { ...database, ENCRYPTION_KEY: keyB, ENCRYPTION_KEY_PREVIOUS: keyA });
    expect(dryRun).toMatchObject({ code: 0, stderr: '' });
    expect(dryRun.stdout).toMatch(/^DKIM private keys: +1 to re-seal, 0 already under ENCRYPTION_KEY$/m);
    expect(dryRun.stdout).toContain('Dry run: nothing was changed.');
    expect(await sealedValues()).toEqual(before);
  });

  it('reseal-secrets re-seals every secret under B in one run; a second run finds nothing to do', async () => {
    const env = { DATABASE_URL: databaseUrl(databaseName), ENCRYPTION_KEY: keyB, ENCRYPTION_KEY_PREVIOUS: keyA };
    const first = await mailroom(['reseal-secrets'], env);
    expect(first).toMatchObject({ code: 0, stderr: '' });
    expect(first.stdout.split('\n').slice(0, 3)).toEqual([
      'DKIM private keys:        1 re-sealed, 0 already under ENCRYPTION_KEY',
      'webhook secrets:          1 re-sealed, 0 already under ENCRYPTION_KEY',
      'previous webhook secrets: 1 re-sealed, 0 already under ENCRYPTION_KEY',
    ]);
    expect(first.stdout).toMatch(/^Keep ENCRYPTION_KEY_PREVIOUS set for at least 30 days/m);

    const second = await mailroom(['reseal-secrets'], env);
    expect(second).toMatchObject({ code: 0, stderr: '' });
    expect(second.stdout).toMatch(/^DKIM private keys: +0 re-sealed, 1 already under ENCRYPTION_KEY$/m);
    expect(second.stdout).toMatch(/^previous webhook secrets: +0 re-sealed, 1 already under ENCRYPTION_KEY$/m);
  });

  it('restarted with ENCRYPTION_KEY=B alone: DKIM and webhook signing still work; links made under A no longer do', async () => {
    const app = await start({ ENCRYPTION_KEY: keyB });
    const { mail, hook } = await deliver(app);
    expect(await dkimOf(mail)).toEqual([[domain, 'pass']]);
    expect(signedWith(hook)).toEqual(['oldSecret', 'newSecret']);

    await app.http.get(clickPath).expect(404);
    await app.http.get(unsubscribePath).expect(404);
  });
});
