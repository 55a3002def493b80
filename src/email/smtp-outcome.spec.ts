import {
  classifySmtpError,
  classifyTransactionError,
  describeSmtpError,
  failureScope,
  healthReason,
  providerRefusal,
  refusedByProvider,
  suppressesRecipient,
} from './smtp-outcome';

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

describe('suppressesRecipient', () => {
  it.each([
    ['550 5.1.1 <a@example.org>: no such user', 550],
    ['550-5.1.1 The email account that you tried to reach does not exist', 550],
    ['553 5.1.2 bad destination system', 553],
    ['501 5.1.3 bad destination mailbox address syntax', 501],
    ['556 5.1.10 recipient domain has a null MX', 556],
    ['550 5.2.1 mailbox disabled', 550],
    ['550 no such user here', 550],
    ['551 user not local', 551],
    ['553 mailbox name not allowed', 553],
    ['550 5.4.1 Recipient address rejected: Access denied. AS(201806281)', 550],
  ])('suppresses on an answer about the address: %s', (text, replyCode) => {
    expect(suppressesRecipient({ replyCode, text })).toBe(true);
    expect(failureScope({ replyCode, text })).toBe('mailbox');
  });

  it.each([
    ['550 5.7.1 relaying denied', 550],
    ['550 5.7.0 potential security issue', 550],
    ['554 5.7.1 message rejected as spam', 554],
    ['550 5.7.26 unauthenticated email is not accepted', 550],
    ['535 5.7.8 authentication credentials invalid', 535],
    ['552 5.2.2 mailbox full', 552],
    ['552 5.2.3 message too large', 552],
    ['554 5.3.4 message too big for system', 554],
    ['554 5.4.6 routing loop detected', 554],
    ['550 5.4.1 no route to host', 550],
    ['500 5.5.2 syntax error', 500],
    ['554 5.6.0 message content error', 554],
    ['550 5.0.0 undefined', 554],
    ['554 transaction failed', 554],
    ['552 exceeded storage allocation', 552],
    ['550 4.2.1 class mismatch: temporary code', 550],
    ['550 relay not permitted', 550],
    ['550 authentication required', 550],
  ])('does not suppress on an answer about the content, policy or system: %s', (text, replyCode) => {
    expect(suppressesRecipient({ replyCode, text })).toBe(false);
    expect(failureScope({ replyCode, text })).toBe('message');
  });

  it('reads the reply code from the text when it is not given, after a diagnostic type', () => {
    expect(suppressesRecipient({ text: 'smtp; 550 5.1.1 user unknown' })).toBe(true);
    expect(suppressesRecipient({ text: 'smtp; 550 user unknown' })).toBe(true);
    expect(suppressesRecipient({ text: 'smtp; 550 5.7.1 refused' })).toBe(false);
  });

  it('takes a DSN Status, unless it is X.0.0 and the diagnostic says more', () => {
    expect(suppressesRecipient({ status: '5.1.1', text: '550 Recipient unknown' })).toBe(true);
    expect(suppressesRecipient({ status: '5.7.0', text: '552 message blocked' })).toBe(false);
    expect(suppressesRecipient({ status: '5.0.0', text: '550 5.1.1 <carol@example.org>: User unknown' })).toBe(true);
    expect(suppressesRecipient({ status: '5.0.0', text: '550 Requested action not taken: mailbox unavailable' })).toBe(true);
    expect(failureScope({ status: '5.0.0' })).toBe('message');
    expect(failureScope({ status: '5.0.0', text: '554 refused' })).toBe('message');
  });

  it('does not take digits of an address or a version for an enhanced code', () => {
    expect(failureScope({ replyCode: 550, text: '550 rejected by 10.5.7.1: no such user' })).toBe('mailbox');
    expect(failureScope({ replyCode: 554, text: '554 host 192.0.5.1.1 says 5.1.1.2 no' })).toBe('message');
  });

  it('says nothing is known of a failure without any code', () => {
    expect(failureScope({})).toBe('unknown');
    expect(failureScope({ text: 'Mailbox does not exist' })).toBe('unknown');
    expect(suppressesRecipient({ text: 'Mailbox does not exist' })).toBe(false);
  });
});

describe('refusedByProvider', () => {
  const answer = (responseCode: number, response: string) => ({ recipient: 'a@example.org', responseCode, response });

  it.each([
    ['550 5.7.1 Relaying denied', 550],
    ['554 5.7.0 Sending paused for this account', 554],
    ['550 5.3.0 Other mail system problem', 550],
    ['554 5.4.4 Unable to route', 554],
    ['555 5.5.4 Invalid parameter', 555],
  ])('is the relay refusing us: %s', (response, code) => {
    expect(refusedByProvider(answer(code, response))).toBe(true);
  });

  it.each([
    ['550 5.1.1 No such user', 550],
    ['550 5.4.1 Recipient address rejected: Access denied', 550],
    ['552 5.2.2 Mailbox full', 552],
    ['550 No such user here', 550],
    ['451 4.7.1 Try again later', 451],
    ['554 5.6.0 Bad content', 554],
  ])('is not: %s', (response, code) => {
    expect(refusedByProvider(answer(code, response))).toBe(false);
  });

  it.each([
    ['550 relay not permitted', 550],
    ['550 Authentication required', 550],
    ['554 Relay access denied', 554],
    ['550 5.0.0 relaying denied', 550],
  ])('is, without an enhanced code, a refusal that says relay or authentication: %s', (response, code) => {
    expect(refusedByProvider(answer(code, response))).toBe(true);
    expect(suppressesRecipient({ replyCode: code, text: response })).toBe(false);
  });

  it('reads those words outside the addresses: a mailbox named relay@ is still unknown', () => {
    const unknown = answer(550, '550 <relay@example.org>: no such user');
    expect(refusedByProvider(unknown)).toBe(false);
    expect(suppressesRecipient({ replyCode: 550, text: unknown.response })).toBe(true);
  });
});

describe('providerRefusal', () => {
  const relaying = (recipient: string) => ({ recipient, responseCode: 550, response: `550 5.7.1 <${recipient}>: Relaying denied` });

  it('describes a transaction the provider refused as a whole in one line, naming the first recipient', () => {
    expect(providerRefusal({ accepted: [], rejected: [relaying('a@example.org'), relaying('b@example.org')] })).toBe(
      'RCPT TO a@example.org: 550 5.7.1 <a@example.org>: Relaying denied (and 1 more recipients)',
    );
  });

  it('is null when any recipient was accepted or refused for its address, or nobody was refused', () => {
    expect(providerRefusal({ accepted: ['b@example.org'], rejected: [relaying('a@example.org')] })).toBeNull();
    const unknown = { recipient: 'b@example.org', responseCode: 550, response: '550 5.1.1 No such user' };
    expect(providerRefusal({ accepted: [], rejected: [relaying('a@example.org'), unknown] })).toBeNull();
    expect(providerRefusal({ accepted: [], rejected: [unknown] })).toBeNull();
    expect(providerRefusal({ accepted: ['a@example.org'], rejected: [] })).toBeNull();
  });
});

describe('healthReason', () => {
  it('keeps the command, codes and words, and no address of anyone', () => {
    expect(healthReason('RCPT TO a@example.org: 550 5.7.1 <a@example.org>: Relaying denied (and 1 more recipients)')).toBe(
      'RCPT TO: 550 5.7.1: Relaying denied (and 1 more recipients)',
    );
    expect(healthReason('MAIL FROM: 553 5.7.1 <bounce+m_1@mr.example>: Sender address rejected: not owned by "ann@acme.test"')).toBe(
      'MAIL FROM: 553 5.7.1: Sender address rejected: not owned by',
    );
    expect(healthReason('AUTH PLAIN: 535 5.7.8 Authentication credentials invalid')).toBe(
      'AUTH PLAIN: 535 5.7.8 Authentication credentials invalid',
    );
    expect(healthReason(`DATA: 554 ${'x'.repeat(300)}`)).toHaveLength(200);
  });
});
