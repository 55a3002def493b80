import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ErrorCode } from './error-code';

export class ErrorDetailDto {
  @ApiProperty({ enum: ErrorCode, example: ErrorCode.ValidationFailed })
  code: ErrorCode;

  @ApiProperty({ example: 'Request validation failed: name: name must be a string' })
  message: string;

  @ApiPropertyOptional({
    example: { fields: [{ field: 'name', message: 'name must be a string' }] },
    description:
      'Machine-readable particulars: `fields: [{field, message}]` for validation errors; ' +
      '`limit, remaining, reset_time, retry_after, scope` for rate limits (quotas add `quota, window, requested`).',
    type: 'object',
    additionalProperties: true,
  })
  details?: Record<string, unknown>;
}

/** The body of every error response (D-10). */
export class ErrorBodyDto {
  @ApiProperty({ type: ErrorDetailDto })
  error: ErrorDetailDto;

  @ApiProperty({ example: 'http://localhost:3000/docs#errors', description: 'Where the error code is explained' })
  documentation: string;
}
