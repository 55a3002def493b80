import { CONFIRMATION_STRINGS } from '../i18n/confirmation-strings';
import type { FormLanguage } from '../i18n/language';
import { buttonPage, simplePage } from '../submissions/pages';
import { type ConfirmationView, pendingOf } from './confirmation-view';

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
      // What was sent says so; what was not is promised only as far as the quota allows.
      const pending = pendingOf(view);
      const until = view.quotaResetAt ? view.quotaResetAt.toISOString().slice(0, 16).replace('T', ' ') : null;
      const rest = !pending ? [] : view.waitingForQuota ? [s.waitingForQuota(pending, until)] : [s.following(pending)];
      return simplePage(
        s.confirmedTitle,
        [view.sentNow ? `${s.confirmed(view.form.name)} ${s.onTheWay(view.sentNow)}` : s.confirmed(view.form.name), ...rest],
        language,
      );
    }
  }
}
