import { generateKeyPairSync } from 'node:crypto';
import { promises as dnsPromises } from 'node:dns';
import { authenticate, type AuthenticateResult, dkimSign } from 'mailauth';
import nodemailer, { type Transporter } from 'nodemailer';
import { DataSource } from 'typeorm';
import { startDnsServer, TestDnsServer } from '../support/dns-server';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount } from '../support/factories';
import { freePort } from '../support/free-port';
import { ReceivedMail, SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';

const FORWARDING_DOMAIN = 'fwd.test';
const INBOUND_HOSTNAME = 'mx.mailroom.test';
/** Where the final recipient's server sees Mailroom connect from: in no SPF record of the test. */
const MAILROOM_OUTBOUND_IP = '192.0.2.25';

describe('Forwarding: SPF, DKIM, DMARC and ARC of received mail', () => {
  let t: TestApp;
  let dns: TestDnsServer;
  let sink: SmtpSink;
  let client: Transporter;
  let receiverResolver: dnsPromises.Resolver;
  const news = generateKeyPairSync('rsa', { modulusLength: 2048 });
  let counter = 0;
  const subject = (label: string) => `${label} ${++counter} ${Date.now()}`;

  beforeAll(async () => {
    dns = await startDnsServer();
    sink = await startSmtpSink();
    const port = await freePort();
    t = await createTestApp({
      env: {
        SMTP_URL: sink.url,
        INBOUND_SMTP_PORT: String(port),
        INBOUND_SMTP_HOST: '127.0.0.1',
        INBOUND_SMTP_HOSTNAME: INBOUND_HOSTNAME,
        DNS_SERVERS: dns.address,
      },
    });
    const account = await createAccount(t, 'Forwarder');
    await createVerifiedDomain(t, account.accountId, FORWARDING_DOMAIN, dns);
    // Another domain of the same account, which publishes no DMARC record.
    await createVerifiedDomain(t, account.accountId, 'corp.test', dns);
    // A second forwarding domain, for mail that comes back through Mailroom after a first forward.
    await createVerifiedDomain(t, account.accountId, 'relay.test', dns);
    await t.http
      .put('/domains/relay.test')
      .set(bearer(account.adminKey))
      .send({ forwarding: { info: ['bob@dest.test'] } })
      .expect(200);
    await t.http
      .put(`/domains/${FORWARDING_DOMAIN}`)
      .set(bearer(account.adminKey))
      .send({ forwarding: { info: ['ada@dest.test'] } })
      .expect(200);

    // The forwarding domain asks for rejection of what fails DMARC and has no SPF record covering the test's client.
    dns.setTxt(`_dmarc.${FORWARDING_DOMAIN}`, 'v=DMARC1; p=reject');
    // A bank that rejects what fails DMARC, sending only from another address.
    dns.setTxt('strict-bank.test', 'v=spf1 ip4:192.0.2.99 -all');
    dns.setTxt('_dmarc.strict-bank.test', 'v=DMARC1; p=reject');
    // A newsletter that DKIM-signs its mail (and publishes no SPF).
    dns.setTxt('s1._domainkey.news.test', `v=DKIM1; k=rsa; p=${news.publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`);
    dns.setTxt('_dmarc.news.test', 'v=DMARC1; p=reject');
    // A sender authenticated by SPF alone (the client of the test is 127.0.0.1).
    dns.setTxt('spf-only.test', 'v=spf1 ip4:127.0.0.1 -all');
    dns.setTxt('_dmarc.spf-only.test', 'v=DMARC1; p=reject');
    // An attacker's signing domain whose DNS fails (SERVFAIL): its signatures end in temperror.
    dns.setFailure('s1._domainkey.lame.attacker.test', 'servfail');
    // A sender whose DMARC record cannot be looked up.
    dns.setFailure('_dmarc.flaky.test', 'servfail');

    client = nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true });
    receiverResolver = new dnsPromises.Resolver();
    receiverResolver.setServers([dns.address]);
  });

  afterAll(async () => {
    client?.close();
    await t?.close();
    await sink?.close();
    await dns?.close();
  });

  function message(from: string, s: string, extra: string[] = []): Buffer {
    return Buffer.from(
      [
        `From: ${from}`,
        `To: info@${FORWARDING_DOMAIN}`,
        `Subject: ${s}`,
        `Message-ID: <${s.replace(/\W/g, '')}@x.test>`,
        ...extra,
        '',
        'Hello.',
        '',
      ].join('\r\n'),
    );
  }

  /** The SMTP error of a refused send. */
  async function refusal(mailFrom: string, raw: Buffer): Promise<{ responseCode: number; response: string }> {
    const err = await client.sendMail({ envelope: { from: mailFrom, to: [`info@${FORWARDING_DOMAIN}`] }, raw }).then(
      () => null,
      (e: { responseCode: number; response: string }) => e,
    );
    if (!err) throw new Error('the server took the message');
    return { responseCode: err.responseCode, response: err.response };
  }

  const storedWithSubject = async (s: string) =>
    Number((await t.app.get(DataSource).query('SELECT count(*) AS n FROM messages WHERE subject = $1', [s]))[0].n);
  const inboundCount = async () => Number((await t.app.get(DataSource).query('SELECT count(*) AS n FROM inbound_messages'))[0].n);

  /** What the final recipient's server (mailauth) makes of a forwarded message, Mailroom connecting from elsewhere. */
  function atReceiver(mail: ReceivedMail): Promise<AuthenticateResult> {
    return authenticate(mail.raw, {
      ip: MAILROOM_OUTBOUND_IP,
      helo: 'out.mailroom.test',
      sender: mail.envelope.mailFrom,
      mta: 'mx.dest.test',
      resolver: (name: string, type: string) => receiverResolver.resolve(name, type as 'TXT'),
      disableBimi: true,
    });
  }

  /** The header fields Mailroom put on top of the received (or rewritten) message. */
  function headerOf(mail: ReceivedMail): string {
    const raw = mail.raw.toString('latin1');
    return raw.slice(0, raw.indexOf('\r\n\r\n') + 2);
  }

  it('refuses mail spoofing the forwarding domain and the account’s other domains with 550 5.7.1, storing and sending nothing', async () => {
    const before = await inboundCount();
    const spoofs = [
      // The issue's case: the forwarding domain itself, from a client in no SPF record, unsigned.
      { mailFrom: `boss@${FORWARDING_DOMAIN}`, from: `Boss <boss@${FORWARDING_DOMAIN}>` },
      // A subdomain aligns with it (relaxed alignment).
      { mailFrom: 'someone@elsewhere.test', from: `boss@billing.${FORWARDING_DOMAIN}` },
      // Another verified domain of the account, with no DMARC record: still refused.
      { mailFrom: 'ceo@corp.test', from: 'ceo@corp.test' },
    ];
    const subjects: string[] = [];
    for (const spoof of spoofs) {
      const s = subject('spoof');
      subjects.push(s);
      const answer = await refusal(spoof.mailFrom, message(spoof.from, s));
      expect(answer.responseCode).toBe(550);
      expect(answer.response).toMatch(
        /^550 5\.7\.1 Unauthenticated mail from [a-z.]+ is not accepted: it is a domain of this address's owner/,
      );
      expect(await storedWithSubject(s)).toBe(0);
    }
    expect(await inboundCount()).toBe(before);

    // A legitimate message sent after them arrives; none of them did.
    const after = subject('after the spoofs');
    await client.sendMail({
      envelope: { from: 'sender@origin.test', to: [`info@${FORWARDING_DOMAIN}`] },
      raw: message('sender@origin.test', after),
    });
    await sink.waitFor((m) => m.parsed?.subject === after);
    expect(sink.messages.filter((m) => subjects.includes(m.parsed?.subject ?? ''))).toEqual([]);
  });

  it('refuses with 550 5.7.1 mail failing DMARC from a domain that publishes p=reject', async () => {
    const s = subject('phish');
    const answer = await refusal('ceo@strict-bank.test', message('CEO <ceo@strict-bank.test>', s));
    expect(answer.responseCode).toBe(550);
    expect(answer.response).toMatch(
      /^550 5\.7\.1 Unauthenticated mail from strict-bank\.test is not accepted due to the domain's DMARC policy \(p=reject\)/,
    );
    expect(await storedWithSubject(s)).toBe(0);
  });

  it('refuses with 550 5.7.1 a p=reject failure carrying a signature of another domain whose key lookup fails', async () => {
    const s = subject('junk signature');
    const unsigned = message('CEO <ceo@strict-bank.test>', s);
    const key = {
      signingDomain: 'lame.attacker.test',
      selector: 's1',
      privateKey: news.privateKey.export({ type: 'pkcs8', format: 'pem' }),
    };
    const { signatures } = await dkimSign(unsigned, { ...key, signatureData: [key] });
    const answer = await refusal('ceo@strict-bank.test', Buffer.concat([Buffer.from(signatures), unsigned]));
    expect(answer.response).toMatch(
      /^550 5\.7\.1 Unauthenticated mail from strict-bank\.test is not accepted due to the domain's DMARC policy/,
    );
    expect(await storedWithSubject(s)).toBe(0);
  });

  it('answers 451 4.4.3 while the DMARC record of the From domain cannot be looked up, storing nothing', async () => {
    const s = subject('flaky dmarc');
    const answer = await refusal('ceo@flaky.test', message('ceo@flaky.test', s));
    expect(answer.responseCode).toBe(451);
    expect(answer.response).toMatch(/^451 4\.4\.3 Could not look up the DMARC policy of flaky\.test/);
    expect(await storedWithSubject(s)).toBe(0);
  });

  it('refuses with 550 5.7.1 a From header without an address, however a mail reader would show it', async () => {
    for (const from of ['=?utf-8?Q?boss=40fwd.test?=', 'undisclosed:;']) {
      const s = subject('no author');
      const answer = await refusal('someone@elsewhere.test', message(from, s));
      expect(answer.response).toMatch(/^550 5\.7\.1 The From header holds no author address/);
      expect(await storedWithSubject(s)).toBe(0);
    }
  });

  it('forwards a DKIM-signed message with our Authentication-Results and an ARC set the receiver validates', async () => {
    const s = subject('newsletter');
    // A forged verdict in our name is removed (RFC 8601 section 5); the newsletter's signature does not cover it.
    const unsigned = message('News <news@news.test>', s, [
      `Authentication-Results: ${INBOUND_HOSTNAME}; dmarc=pass header.from=strict-bank.test`,
    ]);
    const key = { signingDomain: 'news.test', selector: 's1', privateKey: news.privateKey.export({ type: 'pkcs8', format: 'pem' }) };
    const { signatures } = await dkimSign(unsigned, { ...key, signatureData: [key] });
    await client.sendMail({
      envelope: { from: 'bounces@mailer.news.test', to: [`info@${FORWARDING_DOMAIN}`] },
      raw: Buffer.concat([Buffer.from(signatures), unsigned]),
    });

    const mail = await sink.waitFor((m) => m.parsed?.subject === s);
    const header = headerOf(mail);
    const ours =
      header.match(new RegExp(`^Authentication-Results: ${INBOUND_HOSTNAME.replace(/\./g, '\\.')};(?:\\r\\n[ \\t].*)*`, 'gm')) ?? [];
    expect(ours).toHaveLength(1);
    expect(ours[0]).toMatch(/dkim=pass header\.i=@news\.test/);
    expect(ours[0]).toMatch(/dmarc=pass/);
    expect(header).toMatch(/^ARC-Seal: i=1; a=rsa-sha256; t=\d+; cv=none;\s+d=fwd\.test; s=mr1;/m);
    expect(header).toMatch(/^ARC-Authentication-Results: i=1; mx\.mailroom\.test;/m);

    const verdict = await atReceiver(mail);
    expect(verdict.arc && verdict.arc.status.result).toBe('pass');
    expect(verdict.dkim.results.map((r) => [r.signingDomain, r.status.result]).sort()).toEqual([
      [FORWARDING_DOMAIN, 'pass'],
      ['news.test', 'pass'],
    ]);
    expect(verdict.dmarc && verdict.dmarc.status.result).toBe('pass');
    // Not rewritten: the author's own aligned signature survives the forward.
    expect(mail.parsed?.from?.value).toEqual([{ name: 'News', address: 'news@news.test' }]);

    // Forwarded once more (the destination hands it to another forwarding domain): the chain that arrives is
    // validated, and continued with a second set.
    await client.sendMail({ envelope: { from: mail.envelope.mailFrom, to: ['info@relay.test'] }, raw: mail.raw });
    const again = await sink.waitFor((m) => m.parsed?.subject === s && m.envelope.rcptTo.includes('bob@dest.test'));
    expect(headerOf(again)).toMatch(/^ARC-Seal: i=2; a=rsa-sha256; t=\d+; cv=pass;\s+d=relay\.test; s=mr1;/m);
    expect(headerOf(again)).toMatch(/^ARC-Authentication-Results: i=2; mx\.mailroom\.test;[\s\S]*arc=pass/m);
    const second = await atReceiver(again);
    expect(second.arc && [second.arc.status.result, second.arc.i]).toEqual(['pass', 2]);
    expect(second.dmarc && second.dmarc.status.result).toBe('pass');
  });

  it('rewrites the From of a p=reject sender authenticated by SPF only, so that DMARC passes at the receiver', async () => {
    const s = subject('spf only');
    await client.sendMail({
      envelope: { from: 'alice@spf-only.test', to: [`info@${FORWARDING_DOMAIN}`] },
      raw: message('Alice Example <alice@spf-only.test>', s),
    });
    const mail = await sink.waitFor((m) => m.parsed?.subject === s);
    expect(mail.parsed?.from?.value).toEqual([
      { name: `Alice Example via ${FORWARDING_DOMAIN}`, address: `alice.at.spf-only.test@${FORWARDING_DOMAIN}` },
    ]);
    expect(mail.parsed?.replyTo?.value).toEqual([{ name: 'Alice Example', address: 'alice@spf-only.test' }]);
    expect(headerOf(mail)).toMatch(/^Authentication-Results: mx\.mailroom\.test;[\s\S]*spf=pass[\s\S]*dmarc=pass/m);

    const verdict = await atReceiver(mail);
    // SPF cannot pass for the author's domain after a forward; the forwarding domain's aligned signature does.
    expect(verdict.dmarc && verdict.dmarc.status.result).toBe('pass');
    expect(verdict.dmarc && verdict.dmarc.alignment.dkim.result).toBe(FORWARDING_DOMAIN);
    expect(verdict.arc && verdict.arc.status.result).toBe('pass');
    // The listing keeps the author.
    const rows = await t.app.get(DataSource).query('SELECT from_address FROM messages WHERE subject = $1', [s]);
    expect(rows).toEqual([{ from_address: 'alice@spf-only.test' }]);
  });
});
