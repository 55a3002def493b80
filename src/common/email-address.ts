/** The form an address is stored and compared in (suppression entries, list subscribers): trimmed, lower-cased. */
export function normalizeEmailAddress(address: string): string {
  return address.trim().toLowerCase();
}
