import type { Form } from '../form.entity';
import { confirmationPage } from './confirmation-pages';

describe('confirmationPage', () => {
  const form = { id: 'frm_1', name: 'Landing <b>', settings: { recipients: ['owner@example.org'] } } as unknown as Form;

  it('shows the link’s page with a button that posts to its own URL, the form’s name escaped', () => {
    const html = confirmationPage({ state: 'pending', form, held: 2 }, 'en');
    expect(html).toContain('<form method="post"><p><button type="submit">Confirm and receive submissions</button></p></form>');
    expect(html).toContain('“Landing &lt;b&gt;” at owner@example.org');
    expect(html).toContain('2 submissions are waiting and will be sent when you confirm.');
    expect(confirmationPage({ state: 'pending', form, held: 0 }, 'en')).not.toContain('waiting');
  });

  it('says what a confirmation sends and what waits for the quota, in the page’s language', () => {
    const html = confirmationPage(
      { state: 'confirmed', form, held: 3, sentNow: 2, waitingForQuota: true, quotaResetAt: new Date('2030-02-01T00:00:00.000Z') },
      'es',
    );
    expect(html).toContain('<html lang="es">');
    expect(html).toContain('2 envíos que esperaban están en camino.');
    expect(html).toContain(
      '1 envío anterior espera la cuota de correos del remitente: se enviará en cuanto tenga espacio (después de las 2030-02-01 00:00 UTC).',
    );
    expect(html).not.toContain('<form');
  });

  it('says what was sent before the answer, and promises the rest only as far as the quota has room', () => {
    const html = confirmationPage({ state: 'confirmed', form, held: 120, sentNow: 50, waitingForQuota: false, quotaResetAt: null }, 'en');
    expect(html).toContain('50 submissions that were waiting are on the way.');
    expect(html).toContain('70 more waiting submissions follow shortly, as far as the sender’s email allowance has room');
    expect(html).not.toContain('wait for the sender’s email allowance');

    // The first page's mail could not be made: nothing is said to be on the way.
    const none = confirmationPage({ state: 'confirmed', form, held: 1, sentNow: 0, waitingForQuota: false, quotaResetAt: null }, 'de');
    expect(none).not.toContain('unterwegs');
    expect(none).toContain('1 weitere wartende Einsendung folgt in Kürze');
  });

  it('has no button once confirmed, nor for an unknown link', () => {
    expect(confirmationPage({ state: 'already', form }, 'de')).toContain('Bereits bestätigt');
    expect(confirmationPage({ state: 'unknown' }, 'fr')).toContain('Lien introuvable');
    expect(confirmationPage({ state: 'unknown' }, 'fr')).not.toContain('<form');
  });
});
