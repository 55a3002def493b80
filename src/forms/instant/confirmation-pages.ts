import { CONFIRMATION_STRINGS } from '../i18n/confirmation-strings';
import type { FormLanguage } from '../i18n/language';
import { buttonPage, simplePage } from '../submissions/pages';
import type { ConfirmationView } from './confirmation-view';

/**
 * The pages of an instant form's confirmation link: the link's own page (a button that posts; opening it changes
 * nothing, so a mail scanner following links confirms nothing), and the answer to its button.
 */
export function confirmationPage(view: ConfirmationView, language: FormLanguage): string {
  const s = CONFIRMATION_STRINGS[language];
  switch (view.state) {
    case 'unknown':
      return simplePage(s.notFoundTitle, [s.notFound], language);
    case 'pending': {
      const intro = s.pendingIntro(view.form.name, (view.form.settings.recipients ?? []).join(', '));
      return buttonPage(s.pendingTitle, view.held ? [intro, s.pendingHeld(view.held)] : [intro], s.confirmButton, s.notYou, language);
    }
    case 'already':
      return simplePage(s.alreadyTitle, [s.already(view.form.name)], language);
    case 'confirmed': {
      const sending = view.held - view.waiting;
      const until = view.waitingUntil ? view.waitingUntil.toISOString().slice(0, 16).replace('T', ' ') : null;
      return simplePage(
        s.confirmedTitle,
        [
          sending ? `${s.confirmed(view.form.name)} ${s.onTheWay(sending)}` : s.confirmed(view.form.name),
          ...(view.waiting ? [s.waitingForQuota(view.waiting, until)] : []),
        ],
        language,
      );
    }
  }
}
