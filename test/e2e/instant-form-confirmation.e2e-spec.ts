import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { HeldSubmissionReleases } from '../../src/forms/instant/held-submission-releases';
import { FormTargets } from '../../src/forms/submissions/form-targets';
import { bearer, createAccount } from '../support/factories';
import { ReceivedMail, SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { createTestApp, TestApp } from '../support/test-app';
import { waitFor } from '../support/wait-for';

/**
 * An instant form's confirmation (D-29): the emailed link opens a page that changes nothing; its button (a POST)
 * confirms, and exactly one confirmation releases the held submissions, a page at a time.
 */
describe('instant form confirmation', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let db: DataSource;
  let admin: { accountId: string; adminKey: string };
  const unique = () => randomBytes(5).toString('hex');
  const json = { Accept: 'application/json' };

  beforeAll(async () => {
    sink = await startSmtpSink();
    t = await createTestApp({ env: { SMTP_URL: sink.url } });
    db = t.app.get(DataSource);
    admin = await createAccount(t, 'Instant');
  });

  afterAll(async () => {
    await t.close();
    await sink.close();
  });

  const to = (address: string, marker?: string) => (mail: ReceivedMail) =>
    mail.envelope.rcptTo.includes(address) && (marker === undefined || (mail.parsed?.text ?? '').includes(marker));
  /**
   * The notification messages stored for each marker (a duplicate release would store a second one, whenever the sink
   * got it): read once every release that could make one has committed.
   */
  const storedNotifications = async (owner: string, markers: string[]): Promise<number[]> => {
    const rows: { text: string | null }[] = await db.query(`SELECT content->>'text' AS text FROM messages WHERE recipients @> $1::jsonb`, [
      JSON.stringify([owner]),
    ]);
    return markers.map((marker) => rows.filter((row) => (row.text ?? '').includes(marker)).length);
  };

  /** A new instant form and the path of its emailed link. */
  async function instantForm(): Promise<{ id: string; owner: string; link: string }> {
    const owner = `owner-${unique()}@example.org`;
    const created = await t.http.post('/instant/forms').set(bearer(admin.adminKey)).send({ name: 'Landing', email: owner }).expect(201);
    const mail = await sink.waitFor(to(owner));
    const link = /http:\/\/mailroom\.test(\/instant\/forms\/confirm\/[A-Za-z0-9_-]+)/.exec(mail.parsed!.text!)![1];
    return { id: created.body.id, owner, link };
  }

  const submit = (formId: string, message: string) =>
    t.http.post(`/f/${formId}`).set(json).set('X-Api-Key', admin.adminKey).send({ message }).expect(200);

  const statuses = async (formId: string): Promise<string[]> =>
    (await db.query(`SELECT status FROM form_submissions WHERE form_id = $1 ORDER BY created_at`, [formId])).map(
      (row: { status: string }) => row.status,
    );
  const confirmedAt = async (formId: string): Promise<Date | null> =>
    (await db.query(`SELECT confirmed_at FROM forms WHERE id = $1`, [formId]))[0].confirmed_at;

  it('opening the link changes nothing: the page (in the browser’s language) has a button that posts', async () => {
    const form = await instantForm();
    const marker = unique();
    await submit(form.id, marker);

    // As a mail scanner would: any headers, twice.
    const page = await t.http.get(form.link).set('Accept-Language', 'de-CH,de;q=0.9,en;q=0.5').expect(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.headers['cache-control']).toBe('no-store');
    expect(page.text).toContain('<html lang="de">');
    expect(page.text).toContain('Formular bestätigen');
    expect(page.text).toContain('1 Einsendung wartet');
    expect(page.text).toContain('<form method="post"><p><button type="submit">Bestätigen und Einsendungen erhalten</button>');
    await t.http.get(form.link).set(json).expect(200);

    // A confirmation releases its first page before it answers: had a GET confirmed, its mail would be stored by now.
    expect(await confirmedAt(form.id)).toBeNull();
    expect(await statuses(form.id)).toEqual(['held']);
    expect(await storedNotifications(form.owner, [marker])).toEqual([0]);

    // The button's post (a browser navigation) confirms and answers a page.
    const confirmed = await t.http
      .post(form.link)
      .type('form')
      .set({ Accept: 'text/html', 'Sec-Fetch-Mode': 'navigate', 'Accept-Language': 'fr' })
      .send('')
      .expect(200);
    expect(confirmed.headers['content-type']).toMatch(/^text\/html/);
    expect(confirmed.text).toContain('Formulaire confirmé');
    expect(confirmed.text).toContain('1 envoi en attente est en route.');
    await sink.waitFor(to(form.owner, marker));
    // The page now says so, with no button.
    const after = await t.http.get(form.link).expect(200);
    expect(after.text).toContain('Already confirmed');
    expect(after.text).not.toContain('<form');
  });

  it('attaches a held submission’s uploads to its notification when the confirmation releases it', async () => {
    const form = await instantForm();
    const marker = unique();
    const bytes = Buffer.from(`report ${marker}`);
    await t.http
      .post(`/f/${form.id}`)
      .set(json)
      .set('X-Api-Key', admin.adminKey)
      .field('message', marker)
      .attach('upload', bytes, { filename: 'report.txt', contentType: 'text/plain' })
      .expect(200);
    await t.http.post(form.link).set(json).expect(200);
    const mail = await sink.waitFor(to(form.owner, marker));
    expect(mail.parsed!.attachments.map((a) => [a.filename, a.content.toString()])).toEqual([['report.txt', bytes.toString()]]);
  });

  it('refuses a post with a bad token with the same page or JSON error as the link', async () => {
    const bad = '/instant/forms/confirm/not-a-token';
    expect((await t.http.post(bad).set(json).expect(404)).body.error.code).toBe('NOT_FOUND');
    const page = await t.http.post(bad).type('form').set({ Accept: 'text/html', 'Sec-Fetch-Mode': 'navigate' }).send('').expect(404);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.text).toContain('This confirmation link is not known.');
  });

  it('two concurrent confirmations: one confirms, the other is told so, and each held notification goes once', async () => {
    const form = await instantForm();
    const markers = [unique(), unique(), unique()];
    for (const marker of markers) await submit(form.id, marker);

    const answers = await Promise.all([t.http.post(form.link).set(json), t.http.post(form.link).set(json)]);
    expect(answers.map((a) => a.status)).toEqual([200, 200]);
    expect(answers.map((a) => a.body.state).sort()).toEqual(['already_confirmed', 'confirmed']);
    const winner = answers.find((a) => a.body.state === 'confirmed')!.body;
    expect(winner).toEqual({
      formId: form.id,
      name: 'Landing',
      state: 'confirmed',
      held: 3,
      sentNow: 3,
      pending: 0,
      waitingForQuota: false,
      quotaResetAt: null,
    });
    expect(answers.find((a) => a.body.state === 'already_confirmed')!.body).toMatchObject({ held: 0, sentNow: 0, pending: 0 });

    for (const marker of markers) await sink.waitFor(to(form.owner, marker));
    // A third, later one sends nothing either. Nothing is held any more: no release can store another notification.
    await t.http.post(form.link).set(json).expect(200);
    expect(await statuses(form.id)).toEqual(['accepted', 'accepted', 'accepted']);
    expect(await storedNotifications(form.owner, markers)).toEqual([1, 1, 1]);
  });

  it('releases 120 held submissions in pages of at most 50, each committed with its marks; a post during the release goes at once', async () => {
    const form = await instantForm();
    const prefix = `bulk-${unique()}-`;
    const markers = Array.from({ length: 120 }, (_, i) => `${prefix}${i}.`);
    for (let i = 0; i < markers.length; i += 10) await Promise.all(markers.slice(i, i + 10).map((marker) => submit(form.id, marker)));
    expect(await statuses(form.id)).toEqual(markers.map(() => 'held'));

    const answer = await t.http.post(form.link).set(json).expect(200);
    // The answer says what went before it (the first page) and what follows, not more.
    expect(answer.body).toMatchObject({ state: 'confirmed', held: 120, sentNow: 50, pending: 70, waitingForQuota: false });
    // Posted while the release may still run: the form is confirmed, so it is not held.
    const during = unique();
    await submit(form.id, during);
    await sink.waitFor(to(form.owner, during));

    const notified = () => sink.messages.filter((m) => to(form.owner)(m) && (m.parsed?.text ?? '').includes(prefix));
    await waitFor('every held notification', notified, (mails) => mails.length >= 120, 60_000);
    await waitFor(
      'every submission accepted',
      () => statuses(form.id),
      (all) => all.every((status) => status === 'accepted'),
    );
    expect(await storedNotifications(form.owner, markers)).toEqual(markers.map(() => 1));

    // Each release page is one transaction: the submissions it marked share its transaction id.
    const pages: { n: number }[] = await db.query(
      `SELECT count(*)::int AS n FROM form_submissions WHERE form_id = $1 AND status = 'accepted' GROUP BY xmin::text`,
      [form.id],
    );
    const sizes = pages.map((p) => p.n).sort((a, b) => b - a);
    // 120 released (in 3 or more pages, none over 50) and the post made during the release on its own.
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(121);
    expect(sizes.length).toBeGreaterThanOrEqual(4);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(50);
  }, 120_000);

  it('sends what a post stored held just as the form was confirmed, and what a cut-short release left, without another click', async () => {
    // A post that read the form before the confirmation committed stores its submission held after the release looked:
    // the post then finds the form confirmed and brings the submission to a release itself (the sweep held off).
    const form = await instantForm();
    expect((await t.http.post(form.link).set(json).expect(200)).body).toMatchObject({ state: 'confirmed', held: 0 });
    const releases = t.app.get(HeldSubmissionReleases);
    const targets = t.app.get(FormTargets);
    const resolve = targets.resolve.bind(targets);
    const readBeforeConfirmation = jest.spyOn(targets, 'resolve').mockImplementationOnce(async (route, caller) => {
      const found = await resolve(route, caller);
      return Object.assign(Object.create(Object.getPrototypeOf(found) as object) as typeof found, found, { confirmedAt: null });
    });
    const sweep = jest.spyOn(releases, 'sweep').mockResolvedValue(0);
    try {
      const raced = unique();
      await submit(form.id, raced);
      expect(readBeforeConfirmation).toHaveBeenCalled();
      await sink.waitFor(to(form.owner, raced));
      expect(await statuses(form.id)).toEqual(['accepted']);
      expect(sweep).not.toHaveBeenCalled();
    } finally {
      readBeforeConfirmation.mockRestore();
      sweep.mockRestore();
    }

    // A release cut short (the process died after the confirmation committed): the workers' sweep sends the rest, once.
    const other = await instantForm();
    const left = [unique(), unique()];
    for (const marker of left) await submit(other.id, marker);
    await db.query(`UPDATE forms SET confirmed_at = now() WHERE id = $1`, [other.id]);
    await Promise.all([releases.sweep(), releases.sweep()]);
    for (const marker of left) await sink.waitFor(to(other.owner, marker));
    expect(await statuses(other.id)).toEqual(['accepted', 'accepted']);
    expect(await storedNotifications(other.owner, left)).toEqual([1, 1]);
  });
});
