/**
 * References to documents only the developers have: decision ids (`D-13`), issue numbers, "the spec". User-facing
 * text (README, docs, the OpenAPI document, error messages, rendered pages) says the rule itself instead. `spec`
 * inside a file name (`openapi.e2e-spec.ts`) is not one.
 */
const CITATIONS = [/\bD-\d+\b/g, /\bissues? #?\d+/gi, /(?<![-.\w])spec(?:ification)?(?![-.\w])/gi];

/** Each citation in the text with a little of what surrounds it, so a failing test shows where it is. */
export function internalCitations(text: string): string[] {
  return CITATIONS.flatMap((citation) =>
    [...text.matchAll(citation)].map((match) => {
      const start = Math.max(0, match.index - 40);
      return text.slice(start, match.index + match[0].length + 40).replace(/\s+/g, ' ');
    }),
  );
}
