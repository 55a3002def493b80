import { DsnSubject, failedAddresses, notifiable } from './dsn-rules';

const head = (...fields: string[]) => Buffer.from(`${fields.join('\r\n')}\r\n\r\nBody\r\n`);

const subject = (over: Partial<DsnSubject> = {}): DsnSubject => ({
  accountId: 'acc_1',
  sender: 'sender@origin.test',
  senderAuthenticated: true,
  aliases: ['info@fwd.test'],
  rules: { info: ['ada@dest.test', 'bob@dest.test'], sales: ['bob@dest.test'], '*': ['catch@dest.test'] },
  arrivedAt: new Date(),
  head: head('From: a@origin.test', 'Subject: hi', 'Message-ID: <m1@origin.test>'),
  headIsWhole: true,
  subject: 'hi',
  messageId: '<m1@origin.test>',
  ...over,
});

const failure = (recipient: string, diagnostic = `smtp; 550 5.1.1 <${recipient}>: no such user`) => ({
  recipient,
  status: '5.1.1',
  diagnostic,
  lastAttemptAt: new Date(),
});

describe('notifiable', () => {
  it('gives the header section and the Message-ID of an ordinary message', () => {
    expect(notifiable(subject())).toEqual({
      section: 'From: a@origin.test\r\nSubject: hi\r\nMessage-ID: <m1@origin.test>\r\n',
      messageId: '<m1@origin.test>',
    });
  });

  it('owes nothing to a null sender, a MAILER-DAEMON, an automatic message or a report', () => {
    expect(notifiable(subject({ sender: '' }))).toBeNull();
    expect(notifiable(subject({ sender: 'MAILER-DAEMON@origin.test' }))).toBeNull();
    expect(notifiable(subject({ head: head('From: a@origin.test', 'Auto-Submitted: auto-replied') }))).toBeNull();
    expect(notifiable(subject({ head: head('Auto-Submitted: auto-generated (vacation)') }))).toBeNull();
    expect(notifiable(subject({ head: head('Content-Type: multipart/report; report-type=delivery-status; boundary=x') }))).toBeNull();
    expect(notifiable(subject({ head: head('Auto-Submitted: no', 'Subject: x') }))).not.toBeNull();
  });

  it('returns the whole lines of a header section cut short, and none once the message is swept', () => {
    const cut = Buffer.from('From: a@origin.test\r\nSubject: a long one\r\nX-Long: abc');
    expect(notifiable(subject({ head: cut, headIsWhole: false }))?.section).toBe('From: a@origin.test\r\nSubject: a long one\r\n');
    expect(notifiable(subject({ head: null }))).toEqual({ section: null, messageId: null });
  });
});

describe('failedAddresses', () => {
  it('reports a destination under the address the sender wrote, never naming the destination', () => {
    expect(failedAddresses(subject(), [failure('Bob@dest.test')])).toEqual([
      expect.objectContaining({ recipient: 'info@fwd.test', status: '5.1.1', diagnostic: 'smtp; 550 5.1.1 <info@fwd.test>: no such user' }),
    ]);
  });

  it('reports each alias once, only the aliases leading to a failed destination', () => {
    const s = subject({ aliases: ['info@fwd.test', 'sales@fwd.test', 'other@fwd.test'] });
    expect(failedAddresses(s, [failure('ada@dest.test'), failure('bob@dest.test')]).map((f) => f.recipient)).toEqual([
      'info@fwd.test',
      'sales@fwd.test',
    ]);
    expect(failedAddresses(s, [failure('catch@dest.test')]).map((f) => f.recipient)).toEqual(['other@fwd.test']);
  });

  it('names every address of the message when the rules changed since, and never an SRS address', () => {
    const s = subject({ aliases: ['info@fwd.test', 'SRS0=HHHHHHHH=TT=origin.test=a@fwd.test'], rules: { info: ['new@dest.test'] } });
    expect(failedAddresses(s, [failure('ada@dest.test')]).map((f) => f.recipient)).toEqual(['info@fwd.test']);
    expect(failedAddresses(subject({ rules: null }), [failure('ada@dest.test')]).map((f) => f.recipient)).toEqual(['info@fwd.test']);
  });
});
