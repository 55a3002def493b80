import nodemailer, { type Transporter } from 'nodemailer';
import { DataSource } from 'typeorm';
import { EICAR, EICAR_SIGNATURE, startClamd } from '../support/clamd';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount } from '../support/factories';
import { freePort } from '../support/free-port';
import { rawMessage } from '../support/raw-message';
import { SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { ScannerDaemon, startSpamd } from '../support/spamd';
import { createTestApp, TestApp } from '../support/test-app';

/** SpamAssassin's test string (https://spamassassin.apache.org/gtube/): 1000 points by itself. */
const GTUBE = 'XJS*C4JDBQADN1.NSBN3*2IDNEN*GTUBE-STANDARD-ANTI-UBE-TEST-EMAIL*C.34X';

/** What spamd is given of a message at most: small, so that a message past it stays quick to scan. */
const SPAMD_MAX_BYTES = 64 * 1024;

const PLAIN = 'plain.scan.test'; // default settings: spam threshold 5
const STRICT = 'strict.scan.test'; // spam threshold 2
const TOOLS = 'tools.scan.test'; // takes programs and disk images

/** A message with one attachment, base64-encoded as mail clients send files; `contentType` is its top-level field. */
function withAttachment(
  to: string,
  subject: string,
  filename: string,
  bytes: Buffer,
  contentType = 'Content-Type: multipart/mixed; boundary="part-boundary"',
): Buffer {
  const base64 = (bytes.toString('base64').match(/.{1,76}/g) ?? []).join('\r\n');
  return Buffer.from(
    [
      'From: Sender <sender@origin.test>',
      `To: ${to}`,
      `Subject: ${subject}`,
      `Message-ID: <${subject.replace(/\W/g, '')}@origin.test>`,
      'Date: Mon, 23 Nov 2026 10:00:00 +0000',
      'MIME-Version: 1.0',
      contentType,
      '',
      '--part-boundary',
      'Content-Type: text/plain; charset=utf-8',
      '',
      'The file is attached.',
      '--part-boundary',
      `Content-Type: application/octet-stream; name="${filename}"`,
      'Content-Transfer-Encoding: base64',
      `Content-Disposition: attachment; filename="${filename}"`,
      '',
      base64,
      '--part-boundary--',
      '',
    ].join('\r\n'),
  );
}

/**
 * Nothing spammy but no Date and no Message-ID: SpamAssassin's MISSING_DATE (2.7) and MISSING_MID (0.6), less ALL_TRUSTED (-1)
 * as it comes from the loopback address: 2.3 in all.
 */
function mildlySpammy(to: string, subject: string): Buffer {
  return Buffer.from([`From: Sender <sender@origin.test>`, `To: ${to}`, `Subject: ${subject}`, '', 'Just a note.', ''].join('\r\n'));
}

/** A DOS program: file-type knows an .exe by its `MZ` start. */
const PROGRAM = Buffer.concat([Buffer.from('MZ'), Buffer.alloc(1022, 0x90)]);

/** An ISO 9660 image: its primary volume descriptor at sector 16, which file-type does not look for. */
function isoImage(): Buffer {
  const image = Buffer.alloc(0x8800);
  image[0x8000] = 1;
  image.write('CD001', 0x8001, 'latin1');
  return image;
}

describe('Forwarding: spam and virus scanning at DATA (spamd, clamd, attachment types)', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let spamd: ScannerDaemon;
  let clamd: ScannerDaemon;
  let client: Transporter;
  let adminKey: string;
  let counter = 0;
  const subject = (label: string) => `${label} ${++counter} ${Date.now()}`;

  beforeAll(async () => {
    [sink, spamd, clamd] = await Promise.all([startSmtpSink(), startSpamd(), startClamd()]);
    const port = await freePort();
    t = await createTestApp({
      env: {
        SMTP_URL: sink.url,
        INBOUND_SMTP_PORT: String(port),
        INBOUND_SMTP_HOST: '127.0.0.1',
        INBOUND_SPAMD_ADDRESS: spamd.address,
        INBOUND_CLAMD_ADDRESS: clamd.address,
        INBOUND_SPAMD_TIMEOUT_MS: '10000',
        INBOUND_CLAMD_TIMEOUT_MS: '10000',
        INBOUND_SPAMD_MAX_BYTES: String(SPAMD_MAX_BYTES),
      },
    });
    const account = await createAccount(t, 'Scanned');
    adminKey = account.adminKey;
    for (const [name, inboundFiltering] of [
      [PLAIN, undefined],
      [STRICT, { spamThreshold: 2 }],
      [TOOLS, { allowExecutableAttachments: true }],
    ] as const) {
      await createVerifiedDomain(t, account.accountId, name);
      await t.http
        .put(`/domains/${name}`)
        .set(bearer(adminKey))
        .send({ forwarding: { info: [`owner@${name.split('.')[0]}.dest.test`] }, ...(inboundFiltering ? { inboundFiltering } : {}) })
        .expect(200);
    }
    client = nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true });
  }, 60_000);

  afterAll(async () => {
    client?.close();
    await t?.close();
    await Promise.all([sink?.close(), spamd?.stop(), clamd?.stop()]);
  });

  /** The server's answer at the end of DATA: `250 …` when it took the message, else the code and text of the refusal. */
  async function send(to: string[], raw: Buffer): Promise<string> {
    return client.sendMail({ envelope: { from: 'sender@origin.test', to }, raw }).then(
      (info) => String(info.response),
      (err: { response?: string; message: string }) => err.response ?? err.message,
    );
  }

  const storedCount = async () => Number((await t.app.get(DataSource).query('SELECT count(*) AS n FROM inbound_messages'))[0].n);

  /** Sends a clean message after the refused ones and waits for it: by then a refused one would have arrived too. */
  async function expectNoneForwarded(subjects: string[]): Promise<void> {
    const marker = subject('marker');
    expect(await send([`info@${PLAIN}`], rawMessage(`info@${PLAIN}`, marker))).toMatch(/^250 /);
    await sink.waitFor((m) => m.parsed?.subject === marker);
    expect(sink.messages.filter((m) => subjects.includes(m.parsed?.subject ?? ''))).toEqual([]);
  }

  it('forwards a clean message', async () => {
    const s = subject('clean');
    expect(await send([`info@${PLAIN}`], rawMessage(`info@${PLAIN}`, s))).toMatch(/^250 2\.0\.0 Ok: queued as inb_/);
    const mail = await sink.waitFor((m) => m.parsed?.subject === s);
    expect(mail.envelope.rcptTo).toEqual(['owner@plain.dest.test']);
  });

  it('refuses GTUBE with 554 5.7.1 naming the score, stores and forwards nothing', async () => {
    const before = await storedCount();
    const s = subject('gtube');
    const answer = await send([`info@${PLAIN}`], rawMessage(`info@${PLAIN}`, s, { body: `${GTUBE}\r\n` }));
    expect(answer).toMatch(/^554 5\.7\.1 Message refused as spam \(score 1\d{3}(\.\d)?, threshold 5\)/);
    expect(await storedCount()).toBe(before);
    await expectNoneForwarded([s]);
  });

  it('refuses spam in the last part of a message padded at its start past what spamd is given', async () => {
    const s = subject('padded gtube');
    const padding = 'Dear customer, this line is here to fill the message.\r\n'.repeat((2 * SPAMD_MAX_BYTES) / 50);
    const parts = ['--b', 'Content-Type: text/plain', '', `${padding}--b`, 'Content-Type: text/plain', '', GTUBE, '--b--', ''];
    const raw = rawMessage(`info@${PLAIN}`, s, { headers: ['Content-Type: multipart/mixed; boundary="b"'], body: parts.join('\r\n') });
    expect(raw.length).toBeGreaterThan(2 * SPAMD_MAX_BYTES);
    expect(await send([`info@${PLAIN}`], raw)).toMatch(/^554 5\.7\.1 Message refused as spam/);
    await expectNoneForwarded([s]);
  });

  it('holds each domain to its own threshold, and a message for several domains to the strictest', async () => {
    const forPlain = subject('mild plain');
    expect(await send([`info@${PLAIN}`], mildlySpammy(`info@${PLAIN}`, forPlain))).toMatch(/^250 /);
    await sink.waitFor((m) => m.parsed?.subject === forPlain);

    const forStrict = subject('mild strict');
    expect(await send([`info@${STRICT}`], mildlySpammy(`info@${STRICT}`, forStrict))).toMatch(
      /^554 5\.7\.1 Message refused as spam \(score 2\.\d, threshold 2\)/,
    );
    const forBoth = subject('mild both');
    expect(await send([`info@${PLAIN}`, `info@${STRICT}`], mildlySpammy(`info@${PLAIN}`, forBoth))).toMatch(/^554 5\.7\.1 .*threshold 2\)/);
    await expectNoneForwarded([forStrict, forBoth]);
  });

  it('takes, shows and validates inboundFiltering through the domains API', async () => {
    const shown = await t.http.get(`/domains/${STRICT}`).set(bearer(adminKey)).expect(200);
    expect(shown.body.settings.inboundFiltering).toEqual({ spamThreshold: 2, allowExecutableAttachments: false });

    const bad = await t.http
      .put(`/domains/${STRICT}`)
      .set(bearer(adminKey))
      .send({ inboundFiltering: { spamThreshold: 0, allowExecutableAttachments: 'yes', virusScan: false } })
      .expect(400);
    expect(bad.body.error.details.fields.map((f: { field: string }) => f.field).sort()).toEqual([
      'inboundFiltering.allowExecutableAttachments',
      'inboundFiltering.spamThreshold',
      'inboundFiltering.virusScan',
    ]);
    const unchanged = await t.http.get(`/domains/${STRICT}`).set(bearer(adminKey)).expect(200);
    expect(unchanged.body.settings.inboundFiltering.spamThreshold).toBe(2);
  });

  it('takes and exports inboundFiltering in the declarative configuration file', async () => {
    const name = 'config.scan.test';
    const file = { domains: { [name]: { forwarding: { info: 'owner@dest.test' }, inboundFiltering: { spamThreshold: 4 } } } };
    await t.http.put('/config').set(bearer(adminKey)).send(file).expect(200);
    const domain = await t.http.get(`/domains/${name}`).set(bearer(adminKey)).expect(200);
    expect(domain.body.settings.inboundFiltering).toEqual({ spamThreshold: 4, allowExecutableAttachments: false });
    const exported = (await t.http.get('/config').set(bearer(adminKey)).expect(200)).body;
    expect(exported.domains[name].inboundFiltering).toEqual({ spamThreshold: 4, allowExecutableAttachments: false });
    expect(exported.domains[STRICT].inboundFiltering).toEqual({ spamThreshold: 2, allowExecutableAttachments: false });
    // Pushed back, the export changes nothing.
    const again = await t.http.put('/config').set(bearer(adminKey)).send(exported).expect(200);
    expect(again.body.changes).toEqual([]);

    const bad = await t.http
      .put('/config')
      .set(bearer(adminKey))
      .send({ domains: { [name]: { inboundFiltering: { spamThreshold: 'high' } } } })
      .expect(400);
    expect(bad.body.error.details.fields).toEqual([
      { field: `domains.${name}.inboundFiltering.spamThreshold`, message: 'must be a number from 1 to 1000' },
    ]);
  });

  it('refuses a message carrying the EICAR test file with 554 5.7.1 naming the virus', async () => {
    const s = subject('eicar');
    const answer = await send([`info@${TOOLS}`], withAttachment(`info@${TOOLS}`, s, 'eicar.com', EICAR));
    expect(answer).toBe(`554 5.7.1 Message refused: it contains a virus (${EICAR_SIGNATURE})`);
    await expectNoneForwarded([s]);
  });

  it('refuses a program or a disk image by its bytes whatever its name, unless the domain takes them', async () => {
    const program = subject('program');
    expect(await send([`info@${PLAIN}`], withAttachment(`info@${PLAIN}`, program, 'invoice.pdf', PROGRAM))).toBe(
      '554 5.7.1 Message refused: the attachment "invoice.pdf" is a program or installer (exe)',
    );
    const image = subject('image');
    expect(await send([`info@${PLAIN}`], withAttachment(`info@${PLAIN}`, image, 'photos.zip', isoImage()))).toBe(
      '554 5.7.1 Message refused: the attachment "photos.zip" is a disk image (iso)',
    );
    // Mixed with a domain that refuses them, the strictest setting wins.
    const mixed = subject('program mixed');
    expect(await send([`info@${TOOLS}`, `info@${PLAIN}`], withAttachment(`info@${TOOLS}`, mixed, 'setup.exe', PROGRAM))).toMatch(
      /^554 5\.7\.1 Message refused: the attachment "setup\.exe" is a program/,
    );
    await expectNoneForwarded([program, image, mixed]);

    const allowed = subject('program allowed');
    expect(await send([`info@${TOOLS}`], withAttachment(`info@${TOOLS}`, allowed, 'setup.exe', PROGRAM))).toMatch(/^250 /);
    const mail = await sink.waitFor((m) => m.parsed?.subject === allowed);
    expect(mail.parsed!.attachments[0].content.equals(PROGRAM)).toBe(true);
  });

  it('refuses a program attached under a top-level Content-Type written with a space before its colon', async () => {
    // Mail readers (mailparser among them) take `Content-Type :` as the field: the attachment is there for them.
    const s = subject('spaced type');
    const raw = withAttachment(`info@${PLAIN}`, s, 'invoice.pdf', PROGRAM, 'Content-Type : multipart/mixed; boundary="part-boundary"');
    expect(await send([`info@${PLAIN}`], raw)).toBe(
      '554 5.7.1 Message refused: the attachment "invoice.pdf" is a program or installer (exe)',
    );
    await expectNoneForwarded([s]);
  });

  it('scans a bounce coming back to its sender through an SRS address as any forwarded message', async () => {
    const s = subject('before the bounce');
    expect(await send([`info@${PLAIN}`], rawMessage(`info@${PLAIN}`, s))).toMatch(/^250 /);
    const srsAddress = (await sink.waitFor((m) => m.parsed?.subject === s)).envelope.mailFrom;
    const bounce = subject('spam bounce');
    const raw = rawMessage(srsAddress, bounce, { body: `${GTUBE}\r\n` });
    const answer = await client.sendMail({ envelope: { from: '', to: [srsAddress] }, raw }).then(
      (info) => String(info.response),
      (err: { response?: string; message: string }) => err.response ?? err.message,
    );
    expect(answer).toMatch(/^554 5\.7\.1 Message refused as spam/);
    await expectNoneForwarded([bounce]);
  });

  it('counts what the scans found', async () => {
    const counts = async () => {
      const text = (await t.http.get('/metrics').set(bearer(t.operatorKey)).expect(200)).text;
      const count = (result: string) =>
        Number(new RegExp(`^mailroom_inbound_content_scans_total\\{result="${result}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
      return { clean: count('clean'), spam: count('spam'), virus: count('virus'), attachment: count('attachment') };
    };
    const before = await counts();
    expect(await send([`info@${PLAIN}`], rawMessage(`info@${PLAIN}`, subject('counted clean')))).toMatch(/^250 /);
    expect(await send([`info@${PLAIN}`], rawMessage(`info@${PLAIN}`, subject('counted spam'), { body: `${GTUBE}\r\n` }))).toMatch(/^554 /);
    expect(await send([`info@${TOOLS}`], withAttachment(`info@${TOOLS}`, subject('counted virus'), 'eicar.com', EICAR))).toMatch(/^554 /);
    expect(await send([`info@${PLAIN}`], withAttachment(`info@${PLAIN}`, subject('counted program'), 'a.exe', PROGRAM))).toMatch(/^554 /);
    expect(await counts()).toEqual({
      clean: before.clean + 1,
      spam: before.spam + 1,
      virus: before.virus + 1,
      attachment: before.attachment + 1,
    });
  });

  // Last: it stops the scanners.
  it('answers 451 4.3.0 while a scanner it is told to use is down, and still refuses what the other finds', async () => {
    await spamd.stop();
    const clean = subject('spamd down');
    expect(await send([`info@${PLAIN}`], rawMessage(`info@${PLAIN}`, clean))).toBe('451 4.3.0 Content scan unavailable, try again later');
    const virus = subject('virus spamd down');
    expect(await send([`info@${PLAIN}`], withAttachment(`info@${PLAIN}`, virus, 'eicar.txt', EICAR))).toMatch(
      /^554 5\.7\.1 Message refused: it contains a virus/,
    );

    await clamd.stop();
    const both = subject('both down');
    expect(await send([`info@${PLAIN}`], rawMessage(`info@${PLAIN}`, both))).toBe('451 4.3.0 Content scan unavailable, try again later');
    expect(sink.messages.filter((m) => [clean, virus, both].includes(m.parsed?.subject ?? ''))).toEqual([]);
  });
});
