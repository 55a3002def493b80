import { QueryFailedError } from 'typeorm';

/** The constraint a PostgreSQL unique violation (23505) broke, or null for any other error. */
export function uniqueViolation(err: unknown): string | null {
  if (!(err instanceof QueryFailedError)) return null;
  const driverError = err.driverError as { code?: string; constraint?: string };
  return driverError.code === '23505' ? (driverError.constraint ?? '') : null;
}

/** True for a PostgreSQL foreign-key violation (23503): a row referred to is gone (deleted meanwhile). */
export function foreignKeyViolation(err: unknown): boolean {
  return err instanceof QueryFailedError && (err.driverError as { code?: string }).code === '23503';
}

/** The constraint a PostgreSQL check violation (23514) broke, or null for any other error. */
export function checkViolation(err: unknown): string | null {
  if (!(err instanceof QueryFailedError)) return null;
  const driverError = err.driverError as { code?: string; constraint?: string };
  return driverError.code === '23514' ? (driverError.constraint ?? '') : null;
}
