import type { FormLanguage } from './language';

/** The words of the pages a visitor sees after posting a form (thank-you and error pages), in each language shipped. */
export interface PageStrings {
  thanksTitle: string;
  thanksReceived: string;
  thanksClose: string;
  backToSite: string;
  errorTitle: string;
  backToForm: string;
  useBackButton: string;
  fixFields: string;
  required: string;
  invalidEmail: string;
  fileRefused: (filename: string) => string;
  /** `wait` is a duration made by waitFor(). */
  tooMany: (wait: string) => string;
  tooManyLater: string;
  tooLarge: string;
  notAccepted: string;
  challengeFailed: string;
  originRefused: string;
  notFound: string;
  unavailable: string;
  errorCode: string;
  about: (duration: string) => string;
  hours: (n: number) => string;
  minutes: (n: number) => string;
}

const plural = (one: string, many: string) => (n: number) => `${n} ${n === 1 ? one : many}`;

export const PAGE_STRINGS: Record<FormLanguage, PageStrings> = {
  en: {
    thanksTitle: 'Thank you!',
    thanksReceived: 'Your submission has been received.',
    thanksClose: 'You can close this page or go back to the site.',
    backToSite: 'Back to the site',
    errorTitle: 'Your submission was not sent',
    backToForm: 'Back to the form',
    useBackButton: "Use your browser's back button to return to the form.",
    fixFields: 'Please correct the following and send the form again:',
    required: 'this field is required',
    invalidEmail: 'must be a valid email address',
    fileRefused: (name) => `the file “${name}” was refused`,
    tooMany: (wait) => `Too many submissions came from your connection. Please try again in ${wait}.`,
    tooManyLater: 'Too many submissions came from your connection. Please try again later.',
    tooLarge: 'The submission or its files are too large.',
    notAccepted: 'The submission could not be read.',
    challengeFailed: 'The spam check did not pass. Please go back to the form and try again.',
    originRefused: 'This form does not accept submissions from this page.',
    notFound: 'This form does not exist (any more).',
    unavailable: 'The form cannot take submissions right now. Please try again later.',
    errorCode: 'Error code',
    about: (duration) => `about ${duration}`,
    hours: plural('hour', 'hours'),
    minutes: plural('minute', 'minutes'),
  },
  de: {
    thanksTitle: 'Vielen Dank!',
    thanksReceived: 'Ihre Nachricht ist bei uns eingegangen.',
    thanksClose: 'Sie können diese Seite schließen oder zur Website zurückkehren.',
    backToSite: 'Zurück zur Website',
    errorTitle: 'Ihre Nachricht wurde nicht gesendet',
    backToForm: 'Zurück zum Formular',
    useBackButton: 'Mit der Zurück-Taste Ihres Browsers kommen Sie zum Formular zurück.',
    fixFields: 'Bitte korrigieren Sie Folgendes und senden Sie das Formular erneut:',
    required: 'dieses Feld ist erforderlich',
    invalidEmail: 'muss eine gültige E-Mail-Adresse sein',
    fileRefused: (name) => `die Datei „${name}“ wurde abgelehnt`,
    tooMany: (wait) => `Von Ihrer Verbindung kamen zu viele Einsendungen. Bitte versuchen Sie es in ${wait} erneut.`,
    tooManyLater: 'Von Ihrer Verbindung kamen zu viele Einsendungen. Bitte versuchen Sie es später erneut.',
    tooLarge: 'Die Nachricht oder ihre Dateien sind zu groß.',
    notAccepted: 'Die Nachricht konnte nicht gelesen werden.',
    challengeFailed: 'Die Spam-Prüfung ist fehlgeschlagen. Bitte kehren Sie zum Formular zurück und versuchen Sie es erneut.',
    originRefused: 'Dieses Formular nimmt keine Nachrichten von dieser Seite an.',
    notFound: 'Dieses Formular gibt es nicht (mehr).',
    unavailable: 'Das Formular kann gerade keine Nachrichten annehmen. Bitte versuchen Sie es später erneut.',
    errorCode: 'Fehlercode',
    about: (duration) => `etwa ${duration}`,
    hours: plural('Stunde', 'Stunden'),
    minutes: plural('Minute', 'Minuten'),
  },
  fr: {
    thanksTitle: 'Merci !',
    thanksReceived: 'Votre message a bien été reçu.',
    thanksClose: 'Vous pouvez fermer cette page ou revenir sur le site.',
    backToSite: 'Retour au site',
    errorTitle: 'Votre message n’a pas été envoyé',
    backToForm: 'Retour au formulaire',
    useBackButton: 'Utilisez le bouton Retour de votre navigateur pour revenir au formulaire.',
    fixFields: 'Veuillez corriger ce qui suit et renvoyer le formulaire :',
    required: 'ce champ est obligatoire',
    invalidEmail: 'doit être une adresse e-mail valide',
    fileRefused: (name) => `le fichier « ${name} » a été refusé`,
    tooMany: (wait) => `Trop d’envois sont venus de votre connexion. Veuillez réessayer dans ${wait}.`,
    tooManyLater: 'Trop d’envois sont venus de votre connexion. Veuillez réessayer plus tard.',
    tooLarge: 'Le message ou ses fichiers sont trop volumineux.',
    notAccepted: 'Le message n’a pas pu être lu.',
    challengeFailed: 'La vérification anti-spam a échoué. Veuillez revenir au formulaire et réessayer.',
    originRefused: 'Ce formulaire n’accepte pas d’envois depuis cette page.',
    notFound: 'Ce formulaire n’existe pas (ou plus).',
    unavailable: 'Le formulaire ne peut pas recevoir de messages pour le moment. Veuillez réessayer plus tard.',
    errorCode: 'Code d’erreur',
    about: (duration) => `environ ${duration}`,
    hours: plural('heure', 'heures'),
    minutes: plural('minute', 'minutes'),
  },
  es: {
    thanksTitle: '¡Gracias!',
    thanksReceived: 'Hemos recibido su mensaje.',
    thanksClose: 'Puede cerrar esta página o volver al sitio.',
    backToSite: 'Volver al sitio',
    errorTitle: 'Su mensaje no se ha enviado',
    backToForm: 'Volver al formulario',
    useBackButton: 'Use el botón Atrás de su navegador para volver al formulario.',
    fixFields: 'Corrija lo siguiente y envíe el formulario de nuevo:',
    required: 'este campo es obligatorio',
    invalidEmail: 'debe ser una dirección de correo electrónico válida',
    fileRefused: (name) => `el archivo «${name}» fue rechazado`,
    tooMany: (wait) => `Llegaron demasiados envíos desde su conexión. Vuelva a intentarlo en ${wait}.`,
    tooManyLater: 'Llegaron demasiados envíos desde su conexión. Vuelva a intentarlo más tarde.',
    tooLarge: 'El mensaje o sus archivos son demasiado grandes.',
    notAccepted: 'No se pudo leer el mensaje.',
    challengeFailed: 'La comprobación antispam no se superó. Vuelva al formulario e inténtelo de nuevo.',
    originRefused: 'Este formulario no acepta envíos desde esta página.',
    notFound: 'Este formulario no existe (o ya no existe).',
    unavailable: 'El formulario no puede recibir mensajes en este momento. Vuelva a intentarlo más tarde.',
    errorCode: 'Código de error',
    about: (duration) => `aproximadamente ${duration}`,
    hours: plural('hora', 'horas'),
    minutes: plural('minuto', 'minutos'),
  },
};

/** A wait in human terms, to the minute: 4800 s is "about 1 hour 20 minutes", never "4800 s". */
export function waitFor(seconds: number, strings: PageStrings): string {
  const total = Math.max(1, Math.round(seconds / 60));
  const hours = Math.floor(total / 60);
  const minutes = total % 60;
  const parts = [hours ? strings.hours(hours) : '', minutes ? strings.minutes(minutes) : ''].filter(Boolean);
  return strings.about(parts.join(' '));
}

/**
 * A field's error as the app words it (in English), in the visitor's language where it is one of the common ones;
 * the particulars (a refused file's reason, a limit) stay as they are.
 */
export function fieldMessage(message: string, strings: PageStrings): string {
  if (/ is required$/.test(message)) return strings.required;
  if (message === 'must be a valid email address') return strings.invalidEmail;
  const refused = /^"(.*)" is refused: ([\s\S]*)$/.exec(message);
  if (refused) return `${strings.fileRefused(refused[1])}: ${refused[2]}`;
  return message;
}
