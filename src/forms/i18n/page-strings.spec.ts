import { fieldMessage, PAGE_STRINGS, waitFor } from './page-strings';

describe('waitFor', () => {
  it('says a wait to the minute, in words', () => {
    expect(waitFor(4800, PAGE_STRINGS.en)).toBe('about 1 hour 20 minutes');
    expect(waitFor(7200, PAGE_STRINGS.de)).toBe('etwa 2 Stunden');
    expect(waitFor(61, PAGE_STRINGS.fr)).toBe('environ 1 minute');
    expect(waitFor(5, PAGE_STRINGS.es)).toBe('aproximadamente 1 minuto');
  });
});

describe('fieldMessage', () => {
  it('translates the common messages and keeps the particulars', () => {
    expect(fieldMessage('name is required', PAGE_STRINGS.de)).toBe('dieses Feld ist erforderlich');
    expect(fieldMessage('must be a valid email address', PAGE_STRINGS.fr)).toBe('doit être une adresse e-mail valide');
    expect(fieldMessage('"cv.zip" is refused: "setup.exe" inside is a program', PAGE_STRINGS.es)).toBe(
      'el archivo «cv.zip» fue rechazado: "setup.exe" inside is a program',
    );
    expect(fieldMessage('at most 998 characters', PAGE_STRINGS.de)).toBe('at most 998 characters');
  });

  it('has every string in every language', () => {
    const keys = Object.keys(PAGE_STRINGS.en).sort();
    for (const strings of Object.values(PAGE_STRINGS)) expect(Object.keys(strings).sort()).toEqual(keys);
  });
});
