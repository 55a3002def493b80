import { ValidateBy, ValidationArguments } from 'class-validator';
import { parseInstant, windowDays } from '../analytics-window';

const instantOf = (value: unknown): Date | null => (typeof value === 'string' ? parseInstant(value) : null);
const sibling = (args: ValidationArguments | undefined, name: string): unknown =>
  (args?.object as Record<string, unknown> | undefined)?.[name];

/** An ISO 8601 date or date-time (see parseInstant); absent passes (IsDefined says so once). */
export function IsInstant(): PropertyDecorator {
  return ValidateBy({
    name: 'isInstant',
    validator: {
      validate: (value: unknown) => value === undefined || instantOf(value) !== null,
      defaultMessage: (args) => `${args?.property} must be an ISO 8601 date or date-time (2026-11-01 or 2026-11-01T09:00:00Z)`,
    },
  });
}

/** Later than the instant in property `start`, and at most `maxDays` after it once both are widened to whole hours. */
export function EndsAfter(start: string, maxDays: number): PropertyDecorator {
  return ValidateBy({
    name: 'endsAfter',
    validator: {
      validate: (value: unknown, args) => {
        const [from, to] = [instantOf(sibling(args, start)), instantOf(value)];
        if (!from || !to) return true; // the instants' own checks report it
        return from < to && windowDays(from, to) <= maxDays;
      },
      defaultMessage: (args) => `${args?.property} must be later than ${start}, and at most ${maxDays} days after it`,
    },
  });
}

/** Absent whenever any of `others` is given. */
export function NotWith(others: string[]): PropertyDecorator {
  return ValidateBy({
    name: 'notWith',
    validator: {
      validate: (value: unknown, args) => value === undefined || others.every((name) => sibling(args, name) === undefined),
      defaultMessage: (args) => `${args?.property} cannot be combined with ${others.join(' and ')}`,
    },
  });
}
