import { CONFIRMATION_STRINGS } from './confirmation-strings';

describe('CONFIRMATION_STRINGS', () => {
  it('has every string in every language', () => {
    const keys = Object.keys(CONFIRMATION_STRINGS.en).sort();
    for (const strings of Object.values(CONFIRMATION_STRINGS)) expect(Object.keys(strings).sort()).toEqual(keys);
  });

  it('counts in the singular and the plural', () => {
    expect(CONFIRMATION_STRINGS.en.onTheWay(1)).toBe('1 submission that was waiting is on the way.');
    expect(CONFIRMATION_STRINGS.en.onTheWay(120)).toBe('120 submissions that were waiting are on the way.');
    expect(CONFIRMATION_STRINGS.de.pendingHeld(1)).toBe('1 Einsendung wartet und wird nach Ihrer Bestätigung gesendet.');
    expect(CONFIRMATION_STRINGS.fr.waitingForQuota(2, null)).toBe(
      '2 envois antérieurs attendent le quota d’e-mails de l’expéditeur : ils seront transmis dès qu’il aura de la place.',
    );
  });
});
