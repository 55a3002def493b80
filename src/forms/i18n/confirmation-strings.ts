import type { FormLanguage } from './language';

/** The words of an instant form's confirmation pages (the emailed link's page and the answer to its button). */
export interface ConfirmationStrings {
  pendingTitle: string;
  pendingIntro: (form: string, address: string) => string;
  /** Held submissions that go out once confirmed. */
  pendingHeld: (n: number) => string;
  confirmButton: string;
  notYou: string;
  confirmedTitle: string;
  confirmed: (form: string) => string;
  onTheWay: (n: number) => string;
  /** Held submissions not sent yet by the answer, the quota not having refused them (yet). */
  following: (n: number) => string;
  /** `until` is a UTC time (YYYY-MM-DD HH:MM), or null when the quota said none. */
  waitingForQuota: (n: number, until: string | null) => string;
  alreadyTitle: string;
  already: (form: string) => string;
  notFoundTitle: string;
  notFound: string;
}

export const CONFIRMATION_STRINGS: Record<FormLanguage, ConfirmationStrings> = {
  en: {
    pendingTitle: 'Confirm your form',
    pendingIntro: (form, address) => `Confirm to receive the submissions of the form “${form}” at ${address}.`,
    pendingHeld: (n) =>
      n === 1
        ? '1 submission is waiting and will be sent when you confirm.'
        : `${n} submissions are waiting and will be sent when you confirm.`,
    confirmButton: 'Confirm and receive submissions',
    notYou: 'If you did not create this form, close this page: nothing will be sent to you.',
    confirmedTitle: 'Form confirmed',
    confirmed: (form) => `Submissions to “${form}” will now be sent to you.`,
    onTheWay: (n) => (n === 1 ? '1 submission that was waiting is on the way.' : `${n} submissions that were waiting are on the way.`),
    following: (n) =>
      `${n === 1 ? '1 more waiting submission follows' : `${n} more waiting submissions follow`} shortly, as far as the ` +
      'sender’s email allowance has room; what it has no room for is sent once it has.',
    waitingForQuota: (n, until) =>
      `${n === 1 ? '1 earlier submission waits' : `${n} earlier submissions wait`} for the sender’s email allowance: ` +
      `${n === 1 ? 'it' : 'they'} will be sent once it has room again${until ? ` (after ${until} UTC)` : ''}.`,
    alreadyTitle: 'Already confirmed',
    already: (form) => `Submissions to “${form}” are already sent to you.`,
    notFoundTitle: 'Link not found',
    notFound: 'This confirmation link is not known. It may have been mistyped, or its form deleted.',
  },
  de: {
    pendingTitle: 'Formular bestätigen',
    pendingIntro: (form, address) => `Bestätigen Sie, um die Einsendungen des Formulars „${form}“ an ${address} zu erhalten.`,
    pendingHeld: (n) =>
      n === 1
        ? '1 Einsendung wartet und wird nach Ihrer Bestätigung gesendet.'
        : `${n} Einsendungen warten und werden nach Ihrer Bestätigung gesendet.`,
    confirmButton: 'Bestätigen und Einsendungen erhalten',
    notYou: 'Wenn Sie dieses Formular nicht angelegt haben, schließen Sie diese Seite: Ihnen wird nichts gesendet.',
    confirmedTitle: 'Formular bestätigt',
    confirmed: (form) => `Einsendungen an „${form}“ werden Ihnen jetzt gesendet.`,
    onTheWay: (n) => (n === 1 ? '1 wartende Einsendung ist unterwegs.' : `${n} wartende Einsendungen sind unterwegs.`),
    following: (n) =>
      `${n === 1 ? '1 weitere wartende Einsendung folgt' : `${n} weitere wartende Einsendungen folgen`} in Kürze, soweit das ` +
      'E-Mail-Kontingent des Absenders Platz hat; wofür es keinen Platz hat, wird gesendet, sobald es wieder Platz hat.',
    waitingForQuota: (n, until) =>
      `${n === 1 ? '1 frühere Einsendung wartet' : `${n} frühere Einsendungen warten`} auf das E-Mail-Kontingent des Absenders: ` +
      `${n === 1 ? 'sie wird' : 'sie werden'} gesendet, sobald es wieder Platz hat${until ? ` (nach ${until} UTC)` : ''}.`,
    alreadyTitle: 'Bereits bestätigt',
    already: (form) => `Einsendungen an „${form}“ werden Ihnen bereits gesendet.`,
    notFoundTitle: 'Link nicht gefunden',
    notFound: 'Dieser Bestätigungslink ist unbekannt. Vielleicht wurde er falsch abgeschrieben oder sein Formular gelöscht.',
  },
  fr: {
    pendingTitle: 'Confirmez votre formulaire',
    pendingIntro: (form, address) => `Confirmez pour recevoir les envois du formulaire « ${form} » à ${address}.`,
    pendingHeld: (n) =>
      n === 1
        ? '1 envoi attend et sera transmis dès votre confirmation.'
        : `${n} envois attendent et seront transmis dès votre confirmation.`,
    confirmButton: 'Confirmer et recevoir les envois',
    notYou: 'Si vous n’avez pas créé ce formulaire, fermez cette page : rien ne vous sera envoyé.',
    confirmedTitle: 'Formulaire confirmé',
    confirmed: (form) => `Les envois de « ${form} » vous seront désormais transmis.`,
    onTheWay: (n) => (n === 1 ? '1 envoi en attente est en route.' : `${n} envois en attente sont en route.`),
    following: (n) =>
      `${n === 1 ? '1 autre envoi en attente suit' : `${n} autres envois en attente suivent`} sous peu, dans la limite du quota ` +
      'd’e-mails de l’expéditeur ; ce qui le dépasse sera transmis dès qu’il aura de la place.',
    waitingForQuota: (n, until) =>
      `${n === 1 ? '1 envoi antérieur attend' : `${n} envois antérieurs attendent`} le quota d’e-mails de l’expéditeur : ` +
      `${n === 1 ? 'il sera transmis' : 'ils seront transmis'} dès qu’il aura de la place${until ? ` (après ${until} UTC)` : ''}.`,
    alreadyTitle: 'Déjà confirmé',
    already: (form) => `Les envois de « ${form} » vous sont déjà transmis.`,
    notFoundTitle: 'Lien introuvable',
    notFound: 'Ce lien de confirmation est inconnu. Il a peut-être été mal recopié, ou son formulaire supprimé.',
  },
  es: {
    pendingTitle: 'Confirme su formulario',
    pendingIntro: (form, address) => `Confirme para recibir los envíos del formulario «${form}» en ${address}.`,
    pendingHeld: (n) =>
      n === 1 ? '1 envío está esperando y se enviará cuando confirme.' : `${n} envíos están esperando y se enviarán cuando confirme.`,
    confirmButton: 'Confirmar y recibir los envíos',
    notYou: 'Si no creó este formulario, cierre esta página: no se le enviará nada.',
    confirmedTitle: 'Formulario confirmado',
    confirmed: (form) => `Los envíos a «${form}» se le enviarán a partir de ahora.`,
    onTheWay: (n) => (n === 1 ? '1 envío que esperaba está en camino.' : `${n} envíos que esperaban están en camino.`),
    following: (n) =>
      `${n === 1 ? '1 envío más que esperaba sigue' : `${n} envíos más que esperaban siguen`} en breve, en la medida en que la ` +
      'cuota de correos del remitente tenga espacio; lo que no quepa se enviará en cuanto lo tenga.',
    waitingForQuota: (n, until) =>
      `${n === 1 ? '1 envío anterior espera' : `${n} envíos anteriores esperan`} la cuota de correos del remitente: ` +
      `${n === 1 ? 'se enviará' : 'se enviarán'} en cuanto tenga espacio${until ? ` (después de las ${until} UTC)` : ''}.`,
    alreadyTitle: 'Ya confirmado',
    already: (form) => `Los envíos a «${form}» ya se le envían.`,
    notFoundTitle: 'Enlace no encontrado',
    notFound: 'Este enlace de confirmación no es conocido. Quizá se copió mal o se eliminó su formulario.',
  },
};
