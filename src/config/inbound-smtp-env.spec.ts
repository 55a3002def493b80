import { ConfigurationError, validateEnv } from './env.schema';

function problemsOf(env: Record<string, string>): string[] {
  try {
    validateEnv(env);
    return [];
  } catch (err) {
    return (err as ConfigurationError).problems;
  }
}

describe('inbound SMTP settings', () => {
  it('offers STARTTLS and limits mail per sender and per domain by default', () => {
    const env = validateEnv({});
    expect(env.INBOUND_SMTP_STARTTLS).toBe(true);
    expect(env.INBOUND_SMTP_MAX_MESSAGES_PER_SENDER_PER_HOUR).toBe(100);
    expect(env.INBOUND_SMTP_MAX_MESSAGES_PER_DOMAIN_PER_HOUR).toBe(1000);
    expect(validateEnv({ INBOUND_SMTP_STARTTLS: 'false', INBOUND_SMTP_MAX_MESSAGES_PER_SENDER_PER_HOUR: '0' })).toMatchObject({
      INBOUND_SMTP_STARTTLS: false,
      INBOUND_SMTP_MAX_MESSAGES_PER_SENDER_PER_HOUR: 0,
    });
  });

  it('takes a certificate file only with its key file, and the reverse', () => {
    const together = 'INBOUND_SMTP_TLS_CERT and INBOUND_SMTP_TLS_KEY go together: set both or neither';
    expect(problemsOf({ INBOUND_SMTP_TLS_CERT: '/etc/tls/cert.pem' })).toEqual([together]);
    expect(problemsOf({ INBOUND_SMTP_TLS_KEY: '/etc/tls/key.pem' })).toEqual([together]);
    expect(problemsOf({ INBOUND_SMTP_TLS_CERT: '/etc/tls/cert.pem', INBOUND_SMTP_TLS_KEY: '/etc/tls/key.pem' })).toEqual([]);
  });

  it('refuses a negative hourly limit', () => {
    expect(problemsOf({ INBOUND_SMTP_MAX_MESSAGES_PER_DOMAIN_PER_HOUR: '-1' })).toEqual([
      expect.stringMatching(/^INBOUND_SMTP_MAX_MESSAGES_PER_DOMAIN_PER_HOUR must not be less than 0/),
    ]);
  });
});
