import { createHash, randomBytes } from 'node:crypto';
import type { Response as AgentResponse } from 'superagent';
import { DataSource } from 'typeorm';
import { AttachmentStore } from '../../src/outbox/attachments/attachment-store';
import { createVerifiedDomain } from '../support/email-fixtures';
import { bearer, createAccount } from '../support/factories';
import { ReceivedMail, SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';
import { isoImage, pdfWithOpenActionJs, peExecutable, zipOf } from '../support/zip-file';

/**
 * Uploads as a website owner's visitors send them, read by a real SMTP server: what Gmail and Outlook refuse is
 * refused at the post (unless the form allows it), and every accepted file is kept with its submission, linked from
 * the notification and downloadable by the owner.
 */
describe('form uploads', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let admin: { accountId: string; adminKey: string };
  const domain = 'uploads-site.test';
  const site = `https://www.${domain}`;
  const json = { Accept: 'application/json', Origin: site };
  const unique = () => randomBytes(5).toString('hex');
  const mailWith = (marker: string) => (mail: ReceivedMail) => (mail.parsed?.text ?? '').includes(marker);

  beforeAll(async () => {
    sink = await startSmtpSink();
    t = await createTestApp({ env: { SMTP_URL: sink.url, FORMS_FROM: 'Forms <forms@mailroom.test>' } });
    admin = await createAccount(t, 'Uploads');
    await createVerifiedDomain(t, admin.accountId, domain);
  });

  afterAll(async () => {
    await t.close();
    await sink.close();
  });

  async function createForm(settings: Record<string, unknown> = {}): Promise<string> {
    const res = await t.http
      .post('/api/forms')
      .set(bearer(admin.adminKey))
      .send({ name: 'Applications', to: 'owner@uploads.example', rateLimit: 1000, allowedOrigins: [site], ...settings });
    expect(res.status).toBe(201);
    return res.body.id;
  }

  /** Posts one file with a marker field; answers the response. */
  function post(formId: string, name: string, bytes: Buffer, contentType = 'application/octet-stream', marker = unique()) {
    return t.http.post(`/f/${formId}`).set(json).field('message', marker).attach('upload', bytes, { filename: name, contentType });
  }

  /** supertest's parser for a body of any type, as bytes. */
  function bytesOf(response: AgentResponse, done: (err: Error | null, body: Buffer) => void): void {
    const chunks: Buffer[] = [];
    response.on('data', (chunk: Buffer) => chunks.push(chunk));
    response.on('end', () => done(null, Buffer.concat(chunks)));
  }

  async function expectRefused(formId: string, name: string, bytes: Buffer, reason: RegExp): Promise<void> {
    const res = await post(formId, name, bytes);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('VALIDATION_FAILED');
    expect(res.body.error.details.fields).toEqual([{ field: 'upload', message: expect.stringMatching(reason) }]);
  }

  describe('refused by default', () => {
    let formId: string;
    beforeAll(async () => {
      formId = await createForm();
    });

    it('refuses a zip holding a program, by name and by its bytes', async () => {
      await expectRefused(formId, 'invoice.zip', zipOf([{ name: 'invoice.exe', data: 'x' }]), /"invoice.exe" inside/);
      await expectRefused(formId, 'invoice.zip', zipOf([{ name: 'invoice.pdf', data: peExecutable() }]), /inside is a program/);
    });

    it('refuses macro-enabled Office documents: by name, and a zip holding vbaProject.bin whatever it is called', async () => {
      await expectRefused(formId, 'budget.docm', Buffer.from('plain words'), /\.docm files are not accepted/);
      const disguised = zipOf([
        { name: '[Content_Types].xml', data: '<?xml version="1.0"?><Types/>' },
        { name: 'word/document.xml', data: '<w:document/>' },
        { name: 'word/vbaProject.bin', data: Buffer.alloc(512, 7) },
      ]);
      await expectRefused(formId, 'budget.docx', disguised, /macro-enabled Office document/);
    });

    it('refuses a PDF that runs JavaScript when opened', async () => {
      await expectRefused(formId, 'cv.pdf', pdfWithOpenActionJs(), /PDF that runs JavaScript/);
    });

    it('refuses a disk image by its bytes, whatever its name', async () => {
      await expectRefused(formId, 'holiday.jpg', isoImage(), /disk image \(iso\)/);
    });

    it.each(['notes.one', 'bank.url', 'launcher.desktop', 'page.mht'])('refuses %s by its name', async (name) => {
      await expectRefused(formId, name, Buffer.from('[InternetShortcut]\r\nURL=https://evil.test/\r\n'), /files are not accepted/);
    });

    it('sends nothing for a refused post', async () => {
      const marker = unique();
      await post(formId, 'app.desktop', Buffer.from('[Desktop Entry]'), 'application/octet-stream', marker).expect(400);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(sink.messages.filter(mailWith(marker))).toEqual([]);
    });
  });

  it('accepts what a form allows explicitly, and checks the setting', async () => {
    const formId = await createForm({ allowedFileTypes: ['iso', '.DOCM'] });
    const form = await t.http.get(`/api/forms/${formId}`).set(bearer(admin.adminKey)).expect(200);
    expect(form.body.settings.allowedFileTypes).toEqual(['iso', 'docm']);
    const marker = unique();
    await post(formId, 'install.iso', isoImage(), 'application/x-iso9660-image', marker).expect(200);
    const mail = await sink.waitFor(mailWith(marker));
    expect(mail.parsed!.attachments.map((a) => a.filename)).toEqual(['install.iso']);

    const refused = await t.http
      .patch(`/api/forms/${formId}`)
      .set(bearer(admin.adminKey))
      .send({ allowedFileTypes: ['exe', 'nonsense'] })
      .expect(400);
    expect(refused.body.error.details.fields.map((f: { field: string }) => f.field)).toEqual(
      expect.arrayContaining([expect.stringMatching(/allowedFileTypes\[0\]/), expect.stringMatching(/allowedFileTypes\[1\]/)]),
    );
  });

  it('accepts a PDF that runs JavaScript, or a zip of encrypted files, once the form allows them by name', async () => {
    const formId = await createForm({ allowedFileTypes: ['pdf-javascript', 'encrypted-archive'] });
    const form = await t.http.get(`/api/forms/${formId}`).set(bearer(admin.adminKey)).expect(200);
    expect(form.body.settings.allowedFileTypes).toEqual(['pdf-javascript', 'encrypted-archive']);
    const marker = unique();
    await post(formId, 'tax-form.pdf', pdfWithOpenActionJs(), 'application/pdf', marker).expect(200);
    const mail = await sink.waitFor(mailWith(marker));
    expect(mail.parsed!.attachments.map((a) => a.filename)).toEqual(['tax-form.pdf']);
    const encrypted = zipOf([{ name: 'statement.pdf', data: '%PDF-1.4', encrypted: true }]);
    await post(formId, 'statements.zip', encrypted, 'application/zip').expect(200);
    // Programs stay refused, encrypted or not.
    await expectRefused(
      formId,
      'tools.zip',
      zipOf([{ name: 'setup.exe', data: peExecutable(), encrypted: true }]),
      /\.exe files are not accepted/,
    );
  });

  it('sends bytes that show no type as application/octet-stream, whatever the browser claimed', async () => {
    const formId = await createForm();
    const marker = unique();
    const bytes = Buffer.from([0x00, 0x01, 0xfe, 0xff, 0x13, 0x37, 0x00, 0x42]);
    const res = await post(formId, 'photo.png', bytes, 'image/png', marker).expect(200);
    const mail = await sink.waitFor(mailWith(marker));
    // As sent (mailparser guesses a type from the name when the part says application/octet-stream).
    expect(mail.raw.toString('latin1')).toMatch(/Content-Type: application\/octet-stream; name=photo\.png/);
    expect(mail.raw.toString('latin1')).not.toMatch(/image\/png/);
    const page = await t.http.get(`/api/forms/${formId}/submissions`).set(bearer(admin.adminKey)).expect(200);
    const stored = page.body.submissions.find((s: { id: string }) => s.id === res.body.submissionId);
    expect(stored.files).toEqual([{ field: 'upload', filename: 'photo.png', contentType: 'application/octet-stream', size: 8 }]);
  });

  it('keeps each file with its submission: downloadable by the API and by the link in the notification', async () => {
    const formId = await createForm();
    const marker = unique();
    const pdf = Buffer.from(`%PDF-1.4\n% résumé ${marker}\n%%EOF\n`);
    const res = await post(formId, 'résumé.pdf', pdf, 'application/pdf', marker).expect(200);
    const submissionId: string = res.body.submissionId;

    const api = await t.http
      .get(`/api/forms/${formId}/submissions/${submissionId}/files/0`)
      .set(bearer(admin.adminKey))
      .buffer(true)
      .parse(bytesOf)
      .expect(200);
    expect(Buffer.compare(api.body as Buffer, pdf)).toBe(0);
    expect(api.headers['content-type']).toMatch(/^application\/pdf/);
    expect(api.headers['content-disposition']).toContain(`filename*=UTF-8''r%C3%A9sum%C3%A9.pdf`);
    expect(api.headers['x-content-type-options']).toBe('nosniff');
    // Without a key, or with another account's key, it is not there.
    await t.http.get(`/api/forms/${formId}/submissions/${submissionId}/files/0`).expect(401);
    const other = await createAccount(t, 'Other');
    await t.http.get(`/api/forms/${formId}/submissions/${submissionId}/files/0`).set(bearer(other.adminKey)).expect(404);
    await t.http.get(`/api/forms/${formId}/submissions/${submissionId}/files/1`).set(bearer(admin.adminKey)).expect(404);

    const mail = await sink.waitFor(mailWith(marker));
    const link = /http:\/\/mailroom\.test(\/forms\/files\/[\w-]+\.[\w-]+)/.exec(mail.parsed!.text ?? '');
    expect(link).not.toBeNull();
    expect(String(mail.parsed!.html)).toContain(`href="http://mailroom.test${link![1]}"`);
    const byLink = await t.http.get(link![1]).buffer(true).parse(bytesOf).expect(200);
    expect((byLink.body as Buffer).equals(pdf)).toBe(true);
    await t.http.get(`${link![1].slice(0, -2)}xx`).expect(404);

    // The email's copy can go (retention), the submission's stays; the sweep leaves a referenced blob alone.
    const dataSource = t.app.get(DataSource);
    await dataSource.query(`DELETE FROM message_attachments`);
    await dataSource.query(`UPDATE attachment_blobs SET referenced_at = now() - interval '2 hours'`);
    await t.app.get(AttachmentStore).deleteUnreferenced(1000);
    await t.http.get(`/api/forms/${formId}/submissions/${submissionId}/files/0`).set(bearer(admin.adminKey)).expect(200);
    // Once the form (and so the submission) is deleted, the sweep takes the bytes.
    await t.http.delete(`/api/forms/${formId}`).set(bearer(admin.adminKey)).expect(200);
    await dataSource.query(`UPDATE attachment_blobs SET referenced_at = now() - interval '2 hours'`);
    await t.app.get(AttachmentStore).deleteUnreferenced(1000);
    await t.http.get(link![1]).expect(404);
    const hash = createHash('sha256').update(pdf).digest('hex');
    expect(await dataSource.query(`SELECT hash FROM attachment_blobs WHERE hash = $1`, [hash])).toEqual([]);
  });

  it('links a 9 MB upload instead of attaching it, and it is not lost', async () => {
    const formId = await createForm();
    const marker = unique();
    const big = randomBytes(9 * 1024 * 1024);
    const res = await post(formId, 'scan.bin', big, 'application/octet-stream', marker).expect(200);
    const mail = await sink.waitFor(mailWith(marker), 20_000);
    expect(mail.parsed!.attachments).toEqual([]);
    expect(mail.parsed!.text).toMatch(/scan\.bin \([^)]*\): http:\/\/mailroom\.test\/forms\/files\//);
    const link = /http:\/\/mailroom\.test(\/forms\/files\/[\w-]+\.[\w-]+)/.exec(mail.parsed!.text ?? '')![1];
    const download = await t.http.get(link).buffer(true).parse(bytesOf).expect(200);
    expect((download.body as Buffer).equals(big)).toBe(true);
    expect(res.body.submissionId).toMatch(/^sub_/);
  }, 60_000);
});
