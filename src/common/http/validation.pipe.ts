import { ArgumentMetadata, ValidationError, ValidationPipe } from '@nestjs/common';
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

/**
 * The one validation step every body, query and path parameter passes before a handler (and so before any
 * query) runs: first text PostgreSQL cannot store, anywhere in the value, then the route's DTO.
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
