import { ErrorAnswer, errorPage } from './pages';

describe('errorPage', () => {
  const quota = (code: string, ownerQuotaText?: string): ErrorAnswer => ({
    status: 429,
    error: { code, message: 'Quota form_submissions_per_hour of the account exceeded (limit 1)', details: { retry_after: 1800 } },
    retryAfter: 1800,
    ownerQuotaText,
  });

  it.each(['QUOTA_EXCEEDED', 'ACCOUNT_QUOTA_EXCEEDED'])(
    '%s: says the form is unavailable, blames no connection, hides the API text',
    (code) => {
      const html = errorPage(quota(code), 'en', null);
      expect(html).toContain('The form cannot take submissions right now. Please try again later.');
      expect(html).not.toContain('your connection');
      expect(html).not.toContain('form_submissions_per_hour');
      expect(html).toContain(code);
    },
  );

  it('says the form’s own global_limited text for a quota', () => {
    const html = errorPage(quota('QUOTA_EXCEEDED', 'We are busy, write again tomorrow.'), 'de', null);
    expect(html).toContain('We are busy, write again tomorrow.');
    expect(html).not.toContain('Verbindung');
    expect(html).not.toContain('form_submissions_per_hour');
  });

  it('still blames the connection for the form’s per-IP limit, with the wait in words', () => {
    const html = errorPage(
      { status: 429, error: { code: 'RATE_LIMIT_EXCEEDED', message: 'x', details: { retry_after: 4800 } } },
      'en',
      null,
    );
    expect(html).toContain('Too many submissions came from your connection. Please try again in about 1 hour 20 minutes.');
  });

  it('links back only to the page it is given, else points to the back button', () => {
    const answer: ErrorAnswer = { status: 400, error: { code: 'VALIDATION_FAILED', message: 'x', details: { fields: [] } } };
    expect(errorPage(answer, 'en', 'https://site.test/contact')).toContain('<a href="https://site.test/contact">Back to the form</a>');
    const without = errorPage(answer, 'en', null);
    expect(without).not.toContain('<a ');
    expect(without).toContain('Use your browser&#39;s back button to return to the form.');
  });
});
