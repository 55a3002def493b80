import { formLanguage } from './language';

describe('formLanguage', () => {
  it('takes _language when it names a shipped language', () => {
    expect(formLanguage('de-AT', 'fr')).toBe('de');
  });

  it('falls back to the best shipped language of Accept-Language, by q-value', () => {
    expect(formLanguage('pt', 'pt-BR, es;q=0.8, fr;q=0.9')).toBe('fr');
    expect(formLanguage(undefined, 'it, es;q=0.5')).toBe('es');
  });

  it('is English when nothing matches', () => {
    expect(formLanguage(undefined, undefined)).toBe('en');
    expect(formLanguage('xx', 'ja, zh;q=0.9')).toBe('en');
  });
});
