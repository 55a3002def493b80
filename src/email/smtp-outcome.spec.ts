import { classifySmtpError, classifyTransactionError, describeSmtpError } from './smtp-outcome';

describe('classifySmtpError', () => {
  it('treats 5xx replies as permanent and 4xx as temporary', () => {
    expect(classifySmtpError({ responseCode: 550, response: '550 5.1.1 No such user' })).toBe('permanent');
    expect(classifySmtpError({ responseCode: 552 })).toBe('permanent');
    expect(classifySmtpError({ responseCode: 451, response: '451 4.3.0 Try later' })).toBe('temporary');
    expect(classifySmtpError({ responseCode: 421 })).toBe('temporary');
  });

  it('falls back to the enhanced status code when the reply code is missing', () => {
    expect(classifySmtpError({ response: 'rejected: 5.7.1 policy' })).toBe('permanent');
    expect(classifySmtpError({ response: 'later: 4.2.2 mailbox full' })).toBe('temporary');
  });

  it('retries connection errors', () => {
    expect(classifySmtpError({ code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 127.0.0.1:25' })).toBe('temporary');
    expect(classifySmtpError({ code: 'ETIMEDOUT' })).toBe('temporary');
  });
});

describe('describeSmtpError', () => {
  it('prefers the server response and names the code of a connection error', () => {
    expect(describeSmtpError({ responseCode: 550, response: '550 5.1.1\r\n No such user' })).toBe('550 5.1.1 No such user');
    expect(describeSmtpError({ code: 'ECONNREFUSED', message: 'connect refused' })).toBe('ECONNREFUSED: connect refused');
  });
});

describe('classifyTransactionError', () => {
  it('gives every recipient its own answer when the server refused them all at RCPT TO', () => {
    const error = {
      code: 'EENVELOPE',
      command: 'RCPT TO',
      response: '550 5.1.1 No such user',
      responseCode: 550,
      rejectedErrors: [
        { code: 'EENVELOPE', command: 'RCPT TO', recipient: 'a@example.org', responseCode: 550, response: '550 5.1.1 No such user' },
        { code: 'EENVELOPE', command: 'RCPT TO', recipient: 'b@example.org', responseCode: 450, response: '450 4.2.1 Mailbox busy' },
      ],
    };
    expect(classifyTransactionError(error)).toEqual({
      kind: 'recipients',
      answers: [
        { recipient: 'a@example.org', responseCode: 550, response: '550 5.1.1 No such user' },
        { recipient: 'b@example.org', responseCode: 450, response: '450 4.2.1 Mailbox busy' },
      ],
    });
  });

  it('blames the provider for a transaction that failed as a whole, whatever the reply code', () => {
    const cases = [
      { code: 'EAUTH', command: 'AUTH PLAIN', responseCode: 535, response: '535 5.7.8 Authentication credentials invalid' },
      { code: 'EENVELOPE', command: 'MAIL FROM', responseCode: 550, response: '550 5.7.1 Sender not allowed' },
      { code: 'EMESSAGE', command: 'DATA', responseCode: 554, response: '554 5.7.1 Rejected by policy' },
      { code: 'ETLS', command: 'CONN', message: 'Error initiating TLS - wrong version number' },
      { code: 'ECONNECTION', command: 'CONN', message: 'connect ECONNREFUSED 127.0.0.1:2525' },
      { code: 'ETIMEDOUT', message: 'Greeting never received' },
    ];
    for (const error of cases)
      expect(classifyTransactionError(error)).toMatchObject({ kind: 'provider', responseCode: error.responseCode });
    expect(classifyTransactionError(cases[0])).toEqual({
      kind: 'provider',
      responseCode: 535,
      description: 'AUTH PLAIN: 535 5.7.8 Authentication credentials invalid',
    });
    expect(classifyTransactionError(cases[3])).toMatchObject({ description: 'ETLS: Error initiating TLS - wrong version number' });
  });

  it('leaves errors that are not SMTP failures to the caller', () => {
    expect(classifyTransactionError(new TypeError('x is undefined'))).toBeNull();
    expect(classifyTransactionError({ code: 'ESTREAM', message: 'stream broke' })).toBeNull();
  });
});
