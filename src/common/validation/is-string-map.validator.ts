import { ValidateBy, ValidationOptions } from 'class-validator';

export interface StringMapLimits {
  maxKeys: number;
  maxKeyLength: number;
  maxValueLength: number;
}

/** Why the value is not a flat object of short strings within the limits, or null when it is. */
export function stringMapProblem(value: unknown, limits: StringMapLimits): string | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'must be an object of strings';
  const entries = Object.entries(value);
  if (entries.length > limits.maxKeys) return `may hold at most ${limits.maxKeys} keys`;
  for (const [key, item] of entries) {
    if (key.length === 0 || key.length > limits.maxKeyLength) return `keys must be 1 to ${limits.maxKeyLength} characters long`;
    if (typeof item !== 'string') return `values must be strings (${key} is not)`;
    if (item.length > limits.maxValueLength) return `values may be at most ${limits.maxValueLength} characters long (${key} is longer)`;
  }
  return null;
}

/** A flat object of strings (metadata, tags), bounded in keys and lengths. */
export function IsStringMap(limits: StringMapLimits, validationOptions?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isStringMap',
      validator: {
        validate: (value: unknown) => stringMapProblem(value, limits) === null,
        defaultMessage: (args) => `${args?.property} ${stringMapProblem(args?.value, limits) ?? 'is not valid'}`,
      },
    },
    validationOptions,
  );
}
