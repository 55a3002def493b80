import { ApiNotFoundResponse, getSchemaPath } from '@nestjs/swagger';
import type { ContentObject } from '@nestjs/swagger/dist/interfaces/open-api-spec.interface';
import { ErrorBodyDto } from '../errors/error-body';

/** Swagger for the routes people open in a browser (tracking links, form pages): an HTML answer. */
export const HTML_PAGE: ContentObject = {
  'text/html': { schema: { type: 'string', example: '<!doctype html><html lang="en">…</html>' } },
};

/** A 404 a browser (Accept: text/html) gets as a page, any other client as the D-10 body. */
export function ApiNotFoundPageResponse(description: string): MethodDecorator & ClassDecorator {
  return ApiNotFoundResponse({
    description,
    content: { 'application/json': { schema: { $ref: getSchemaPath(ErrorBodyDto) } }, ...HTML_PAGE },
  });
}
