/** The languages Mailroom's own form pages and default form emails are written in. */
export const FORM_LANGUAGES = ['en', 'de', 'fr', 'es'] as const;
export type FormLanguage = (typeof FORM_LANGUAGES)[number];

function supported(tag: string): FormLanguage | null {
  const primary = tag.trim().toLowerCase().split(/[-_]/)[0];
  return (FORM_LANGUAGES as readonly string[]).includes(primary) ? (primary as FormLanguage) : null;
}

/**
 * The language of a submission's pages and emails: the form's `_language` field when it names one we ship, else
 * the first of the browser's Accept-Language (by q-value) we ship, else English.
 */
export function formLanguage(requested: string | undefined, acceptLanguage: string | undefined): FormLanguage {
  const fromField = requested ? supported(requested) : null;
  if (fromField) return fromField;
  const ranked = (acceptLanguage ?? '')
    .split(',')
    .map((part, index) => {
      const [tag, ...params] = part.split(';');
      const q = params.map((p) => /^\s*q=([\d.]+)\s*$/.exec(p)?.[1]).find(Boolean);
      return { tag, q: q === undefined ? 1 : Number(q), index };
    })
    .filter(({ tag, q }) => tag.trim() && q > 0)
    .sort((a, b) => b.q - a.q || a.index - b.index);
  for (const { tag } of ranked) {
    const language = supported(tag);
    if (language) return language;
  }
  return 'en';
}
