import { ValidateBy, ValidationOptions, buildMessage } from 'class-validator';

/** Any character that is not of the standard base64 alphabet or its padding. */
const OUTSIDE_ALPHABET = /[^A-Za-z0-9+/=]/;

/**
 * Standard base64 with padding, checked in one pass. class-validator's `@IsBase64` tests an anchored
 * `^[A-Za-z0-9+/]+={0,2}$`, and on an attachment of 17 MB V8 can run out of backtracking stack for it
 * ("Maximum call stack size exceeded", so a 500); an unanchored search for one bad character keeps no state.
 */
export function isBase64(value: string): boolean {
  if (value.length % 4 !== 0) return false;
  const padding = value.indexOf('=');
  if (padding !== -1 && (padding < value.length - 2 || (padding === value.length - 2 && value[value.length - 1] !== '='))) return false;
  return !OUTSIDE_ALPHABET.test(value);
}

export function IsBase64(validationOptions?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isBase64',
      validator: {
        validate: (value: unknown) => typeof value === 'string' && isBase64(value),
        defaultMessage: buildMessage((eachPrefix) => `${eachPrefix}$property must be base64 encoded`, validationOptions),
      },
    },
    validationOptions,
  );
}
