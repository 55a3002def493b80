import { AppConfigService } from '../../config/app-config.service';
import type { MessageWithEvents } from '../../outbox/acceptance.repository';
import type { ComposedEmail, OutboxService } from '../../outbox/outbox.service';
import type { TemplatesService } from '../../templates/templates.service';
import { FormFileLinks } from '../files/file-links';
import type { Form } from '../form.entity';
import type { OwnerNotifications } from '../notifications/owner-notifications';
import type { AcknowledgmentGate } from './acknowledgment-gate';
import type { FormSenders } from './form-sender';
import { notificationOptionsOf, SubmissionMail } from './submission-mail';
import type { HeldSubmission } from './submission-record';
import { parseSubmittedFields } from './submitted-fields';

const DAY_MS = 24 * 60 * 60 * 1000;

/** SubmissionMail with its collaborators faked: what it would send is recorded, nothing is stored. */
function mailer() {
  const sent: ComposedEmail[] = [];
  const message = (email: ComposedEmail): MessageWithEvents => {
    sent.push(email);
    return { message: { id: `msg_${sent.length}`, recipients: email.to } as never, events: [] };
  };
  const links = new FormFileLinks(AppConfigService.fromEnv({ PUBLIC_URL: 'https://mail.example' }));
  const mail = new SubmissionMail(
    { compose: (_account: string, email: ComposedEmail) => Promise.resolve(message(email)) } as unknown as OutboxService,
    { findForForm: () => Promise.resolve(null) } as unknown as TemplatesService,
    {
      senderOf: () => Promise.resolve({ from: { name: 'Contact', address: 'forms@site.test' }, systemSender: false }),
    } as unknown as FormSenders,
    { claim: () => Promise.resolve({ giveBack: () => Promise.resolve() }) } as unknown as AcknowledgmentGate,
    {
      compose: (_account: string, email: ComposedEmail) => Promise.resolve({ message: message(email), held: [] }),
    } as unknown as OwnerNotifications,
    links,
  );
  return { mail, sent, links };
}

const form = {
  id: 'frm_1',
  accountId: 'acc_1',
  name: 'Contact',
  domain: null,
  settings: { recipients: ['owner@site.test'], ccAllowed: ['sales@site.test'], acknowledgment: { enabled: true } },
} as unknown as Form;

/** A post with every control field a notification follows, stored 40 days ago. */
function storedPost(): HeldSubmission {
  const { fields, control } = parseSubmittedFields({
    email: 'visitor@example.org',
    message: 'hallo',
    _subject: 'Anfrage von der Website',
    _replyto: 'reply@example.org',
    _format: 'plain',
    _language: 'de',
    _cc: 'sales@site.test, stranger@evil.test',
  });
  return {
    id: 'sub_1',
    fields,
    files: [{ field: 'cv', filename: 'cv.pdf', contentType: 'application/pdf', size: 10 }],
    ip: '203.0.113.9',
    userAgent: null,
    origin: 'https://www.site.test',
    createdAt: new Date(Date.now() - 40 * DAY_MS),
    heldAttachments: null,
    notificationOptions: notificationOptionsOf(control, form.settings.ccAllowed, 'fr'),
  };
}

describe('SubmissionMail, emails made later than the post', () => {
  const expectAsPosted = (notification: ComposedEmail) => {
    expect(notification.subject).toBe('Anfrage von der Website');
    expect(notification.replyTo).toEqual([{ name: '', address: 'reply@example.org' }]);
    expect(notification.html).toBeUndefined();
    expect(notification.text).toContain('Ein Formular auf www.site.test wurde abgeschickt.');
  };

  it('keeps only the checked control fields, _cc among those the form allows', () => {
    expect(storedPost().notificationOptions).toEqual({
      subject: 'Anfrage von der Website',
      replyTo: 'reply@example.org',
      format: 'plain',
      language: 'de',
      visitorLanguage: 'de',
      cc: ['sales@site.test'],
    });
    const { control } = parseSubmittedFields({ _subject: 'x'.repeat(999), _replyto: 'not an address', _cc: 'a@b.test' });
    expect(notificationOptionsOf(control, undefined, 'es-MX')).toEqual({ language: 'en', visitorLanguage: 'es' });
  });

  it('releases a spam submission with its _subject, _replyto, _format, _language and allowed _cc, no acknowledgment', async () => {
    const { mail, sent } = mailer();
    const release = await mail.release(form, storedPost(), 'spam', new Set());
    expect(sent).toHaveLength(1);
    expectAsPosted(sent[0]);
    expect(sent[0].to).toEqual(['owner@site.test']);
    expect(sent[0].cc).toEqual(['sales@site.test']);
    expect(sent[0].text).toContain('cv.pdf (file not kept: the submission was held as spam)');
    expect(release.acknowledgment).toBeNull();
  });

  it('releases a held submission of an instant form with its acknowledgment in the visitor’s language', async () => {
    const { mail, sent } = mailer();
    const release = await mail.release(form, storedPost(), 'held');
    expect(sent.map((email) => email.to)).toEqual([['owner@site.test'], ['visitor@example.org']]);
    expectAsPosted(sent[0]);
    expect(sent[1].subject).toBe('Wir haben Ihre Nachricht erhalten');
    expect(release.acknowledgment).not.toBeNull();
  });

  it('notifies a lifted recipient as the post asked, without the _cc copies it had then', async () => {
    const { mail, sent } = mailer();
    await mail.notifyOwner(form, storedPost(), ['owner@site.test']);
    expectAsPosted(sent[0]);
    expect(sent[0].cc).toEqual([]);
  });

  it('signs a late notification’s file links for 30 days from when it is made, not from the submission', async () => {
    const { mail, sent, links } = mailer();
    await mail.notifyOwner(form, storedPost(), ['owner@site.test']);
    const token = /https:\/\/mail\.example\/forms\/files\/([\w.-]+)/.exec(sent[0].text)![1];
    expect(links.verify(token)).toEqual({ submissionId: 'sub_1', index: 0 });
    expect(links.verify(token, new Date(Date.now() + 29 * DAY_MS))).toEqual({ submissionId: 'sub_1', index: 0 });
  });

  it('makes the emails of a submission stored before its options were kept with the defaults', async () => {
    const { mail, sent } = mailer();
    await mail.notifyOwner(form, { ...storedPost(), notificationOptions: null }, ['owner@site.test']);
    expect(sent[0].subject).toBe('New submission: Contact');
    expect(sent[0].replyTo).toEqual([{ name: '', address: 'visitor@example.org' }]);
    expect(sent[0].html).toContain('<table');
  });
});
