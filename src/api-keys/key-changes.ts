import type { KeyRestrictions } from '../auth/auth-context';

/** A change to a key's restrictions: a field given a value is set, a field given null removed, one left out kept. */
export type RestrictionsPatch = { [field in keyof KeyRestrictions]?: KeyRestrictions[field] | null };

/**
 * `restrictions` with the patch laid over them field by field, as PATCH /admin/accounts lays limits over a
 * plan; a null patch removes every restriction. Pure: the input is not changed.
 */
export function patchRestrictions(restrictions: KeyRestrictions, patch: RestrictionsPatch | null): KeyRestrictions {
  if (patch === null) return {};
  const next: Record<string, unknown> = { ...restrictions };
  for (const [field, value] of Object.entries(patch)) {
    if (value === null) delete next[field];
    else if (value !== undefined) next[field] = value;
  }
  return next;
}
