import { ArgumentMetadata, ValidationError, ValidationPipe } from '@nestjs/common';
import { getMetadataStorage, ValidationTypes, type ValidatorOptions } from 'class-validator';
import { AppException } from '../errors/app.exception';
import { unstorableText } from './storable-text';

/** `attachments[0].filename`, like the paths every other check names (`to[1]`): array items by index. */
function childField(parent: string, property: string): string {
  if (/^\d+$/.test(property)) return `${parent}[${property}]`;
  return parent ? `${parent}.${property}` : property;
}

export function flatten(errors: ValidationError[], parent = ''): { field: string; message: string }[] {
  return errors.flatMap((error) => {
    const field = childField(parent, error.property);
    const own = Object.values(error.constraints ?? {}).map((message) => ({ field, message }));
    return [...own, ...flatten(error.children ?? [], field)];
  });
}

const NOT_AN_ARRAY = 'must be an object, not an array';

const misplaced = (property: string): ValidationError => ({ property, constraints: { isObject: NOT_AN_ARRAY }, children: [] });

/**
 * An error for each array that stands where a DTO declares a nested object (`@ValidateNested()`), as a property or,
 * for a list of them, as an item. class-validator walks such an array item by item and passes an empty one, so
 * `{"forms":[[]]}` would reach the handler with an array for a form. A property typed as an array without
 * `each` is a list too: class-validator validates its items the same way.
 */
export function arraysForObjects(instance: object): ValidationError[] {
  const nested = getMetadataStorage()
    .getTargetValidationMetadatas(instance.constructor, '', false, false)
    .filter((metadata) => metadata.type === ValidationTypes.NESTED_VALIDATION);
  const errors: ValidationError[] = [];
  for (const property of new Set(nested.map((metadata) => metadata.propertyName))) {
    const value: unknown = (instance as Record<string, unknown>)[property];
    const isList =
      nested.some((metadata) => metadata.propertyName === property && metadata.each) ||
      Reflect.getMetadata('design:type', instance, property) === Array;
    const error = isList && Array.isArray(value) ? listError(property, value) : objectError(property, value);
    if (error) errors.push(error);
  }
  return errors;
}

function objectError(property: string, value: unknown): ValidationError | undefined {
  if (Array.isArray(value)) return misplaced(property);
  if (value === null || typeof value !== 'object') return undefined;
  const children = arraysForObjects(value);
  return children.length ? { property, children } : undefined;
}

function listError(property: string, items: unknown[]): ValidationError | undefined {
  const children = items.flatMap((item, i) => objectError(String(i), item) ?? []);
  return children.length ? { property, children } : undefined;
}

/**
 * The one validation step every body, query and path parameter passes before a handler (and so before any
 * query) runs: first text PostgreSQL cannot store, anywhere in the value, then the route's DTO, where an array
 * never stands for an object.
 */
export class RequestValidationPipe extends ValidationPipe {
  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    if (metadata.type !== 'custom') {
      const problems = unstorableText(value, metadata.data ?? '');
      if (problems.length > 0) {
        throw AppException.validation(problems.map((p) => (p.field ? p : { ...p, field: metadata.type })));
      }
    }
    return super.transform(value, metadata);
  }

  protected override async validate(object: object, options?: ValidatorOptions): Promise<ValidationError[]> {
    // A whole body given as an array: what class-validator would say of its items as properties is noise.
    if (Array.isArray(object)) return [misplaced('body')];
    return [...arraysForObjects(object), ...(await super.validate(object, options))];
  }
}

/** DTO validation for every route: unknown fields are refused, and the error lists each bad field (D-10). */
export function createValidationPipe(): ValidationPipe {
  return new RequestValidationPipe({
    transform: true,
    whitelist: true,
    forbidNonWhitelisted: true,
    stopAtFirstError: false,
    exceptionFactory: (errors) => AppException.validation(flatten(errors)),
  });
}
