import { classifySmtpError, describeSmtpError } from './smtp-outcome';

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
