import type { FormLanguage } from '../i18n/language';

/** The words of the default notification and acknowledgment, in each language Mailroom ships. */
export interface EmailStrings {
  notificationSubject: (form: string) => string;
  notificationIntro: (domain: string | null) => string;
  noFields: string;
  files: string;
  notificationFooter: (timestamp: string, ip: string, submissionId: string) => string;
  /** Where the rest of a value that was cut is: the stored submission, for the owner. */
  cutInNotification: (more: number, submissionId: string, formId: string | undefined) => string;
  acknowledgmentSubject: string;
  acknowledgmentHeading: string;
  acknowledgmentIntro: (form: string, domain: string | null) => string;
  acknowledgmentFooter: (timestamp: string, submissionId: string) => string;
  /** A value of the visitor's that was cut, in an acknowledgment template that asked for it. */
  cutInAcknowledgment: (more: number) => string;
}

const submissionsRoute = (formId: string | undefined) => `GET /api/forms/${formId ?? '{formId}'}/submissions`;

export const EMAIL_STRINGS: Record<FormLanguage, EmailStrings> = {
  en: {
    notificationSubject: (form) => `New submission: ${form}`,
    notificationIntro: (domain) => (domain ? `A form on ${domain} was submitted.` : 'A form was submitted.'),
    noFields: '(no fields)',
    files: 'Files',
    notificationFooter: (timestamp, ip, id) => `Submitted ${timestamp} from ${ip} · submission ${id}`,
    cutInNotification: (more, id, formId) =>
      `… (cut: ${more} more characters; the whole value is in submission ${id}: ${submissionsRoute(formId)})`,
    acknowledgmentSubject: 'We received your message',
    acknowledgmentHeading: 'Thank you for your message',
    acknowledgmentIntro: (form, domain) => `Your message to “${form}”${domain ? ` on ${domain}` : ''} has been received.`,
    acknowledgmentFooter: (timestamp, id) => `Received ${timestamp} · reference ${id}`,
    cutInAcknowledgment: (more) => `… (cut: ${more} more characters)`,
  },
  de: {
    notificationSubject: (form) => `Neue Einsendung: ${form}`,
    notificationIntro: (domain) => (domain ? `Ein Formular auf ${domain} wurde abgeschickt.` : 'Ein Formular wurde abgeschickt.'),
    noFields: '(keine Felder)',
    files: 'Dateien',
    notificationFooter: (timestamp, ip, id) => `Abgeschickt ${timestamp} von ${ip} · Einsendung ${id}`,
    cutInNotification: (more, id, formId) =>
      `… (gekürzt: ${more} weitere Zeichen; der ganze Wert steht in Einsendung ${id}: ${submissionsRoute(formId)})`,
    acknowledgmentSubject: 'Wir haben Ihre Nachricht erhalten',
    acknowledgmentHeading: 'Vielen Dank für Ihre Nachricht',
    acknowledgmentIntro: (form, domain) => `Ihre Nachricht an „${form}“${domain ? ` auf ${domain}` : ''} ist bei uns eingegangen.`,
    acknowledgmentFooter: (timestamp, id) => `Eingegangen ${timestamp} · Referenz ${id}`,
    cutInAcknowledgment: (more) => `… (gekürzt: ${more} weitere Zeichen)`,
  },
  fr: {
    notificationSubject: (form) => `Nouvel envoi : ${form}`,
    notificationIntro: (domain) => (domain ? `Un formulaire de ${domain} a été envoyé.` : 'Un formulaire a été envoyé.'),
    noFields: '(aucun champ)',
    files: 'Fichiers',
    notificationFooter: (timestamp, ip, id) => `Envoyé le ${timestamp} depuis ${ip} · envoi ${id}`,
    cutInNotification: (more, id, formId) =>
      `… (coupé : ${more} caractères de plus ; la valeur entière est dans l’envoi ${id} : ${submissionsRoute(formId)})`,
    acknowledgmentSubject: 'Nous avons bien reçu votre message',
    acknowledgmentHeading: 'Merci pour votre message',
    acknowledgmentIntro: (form, domain) => `Votre message à « ${form} »${domain ? ` sur ${domain}` : ''} a bien été reçu.`,
    acknowledgmentFooter: (timestamp, id) => `Reçu le ${timestamp} · référence ${id}`,
    cutInAcknowledgment: (more) => `… (coupé : ${more} caractères de plus)`,
  },
  es: {
    notificationSubject: (form) => `Nuevo envío: ${form}`,
    notificationIntro: (domain) => (domain ? `Se ha enviado un formulario de ${domain}.` : 'Se ha enviado un formulario.'),
    noFields: '(sin campos)',
    files: 'Archivos',
    notificationFooter: (timestamp, ip, id) => `Enviado ${timestamp} desde ${ip} · envío ${id}`,
    cutInNotification: (more, id, formId) =>
      `… (recortado: ${more} caracteres más; el valor completo está en el envío ${id}: ${submissionsRoute(formId)})`,
    acknowledgmentSubject: 'Hemos recibido su mensaje',
    acknowledgmentHeading: 'Gracias por su mensaje',
    acknowledgmentIntro: (form, domain) => `Hemos recibido su mensaje para «${form}»${domain ? ` en ${domain}` : ''}.`,
    acknowledgmentFooter: (timestamp, id) => `Recibido ${timestamp} · referencia ${id}`,
    cutInAcknowledgment: (more) => `… (recortado: ${more} caracteres más)`,
  },
};
