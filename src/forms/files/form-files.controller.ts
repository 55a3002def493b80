import { Controller, Get, Header, Param, StreamableFile } from '@nestjs/common';
import { ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import type { AuthContext } from '../../auth/auth-context';
import { Auth, Public } from '../../auth/auth.decorator';
import { CurrentAuth } from '../../auth/current-auth.decorator';
import { AppException } from '../../common/errors/app.exception';
import { ErrorBodyDto } from '../../common/errors/error-body';
import { FILE_LINK_DAYS } from './file-links';
import { FormFilesService } from './form-files.service';

const FILE_BODY = { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } };

/** The uploads of stored submissions: by API key, and by the signed link in the owner's notification. */
@ApiTags('Forms')
@Controller()
export class FormFilesController {
  constructor(private readonly files: FormFilesService) {}

  @Get('api/forms/:id/submissions/:submissionId/files/:index')
  @Auth({ keyTypes: ['admin', 'usage'], permission: 'forms.read' })
  @Header('X-Content-Type-Options', 'nosniff')
  @Header('Content-Security-Policy', 'sandbox')
  @Header('Cache-Control', 'private, no-store')
  @ApiOperation({
    summary: 'Download a file uploaded with a submission',
    description: 'index: the file’s position in the submission’s files (0 for the first). Always served as an attachment.',
  })
  @ApiParam({ name: 'index', type: Number, example: 0 })
  @ApiOkResponse({ description: 'The file’s bytes, with its stored type and name', content: FILE_BODY })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  ofSubmission(
    @CurrentAuth() auth: AuthContext,
    @Param('id') id: string,
    @Param('submissionId') submissionId: string,
    @Param('index') index: string,
  ): Promise<StreamableFile> {
    return this.files.ofSubmission(auth.accountId, id, submissionId, fileIndex(index));
  }

  @Get('forms/files/:token')
  @Public()
  @Header('X-Content-Type-Options', 'nosniff')
  @Header('Content-Security-Policy', 'sandbox')
  @Header('Cache-Control', 'private, no-store')
  @Header('Referrer-Policy', 'no-referrer')
  @ApiOperation({
    summary: 'Download a file by the link in a form notification',
    description: `The link is signed and works for ${FILE_LINK_DAYS} days from when the notification carrying it was made; later, use the API route.`,
  })
  @ApiOkResponse({ description: 'The file’s bytes, with its stored type and name', content: FILE_BODY })
  @ApiNotFoundResponse({ type: ErrorBodyDto, description: 'Unknown, tampered with or expired link' })
  byLink(@Param('token') token: string): Promise<StreamableFile> {
    return this.files.byLink(token);
  }
}

function fileIndex(value: string): number {
  if (!/^\d{1,3}$/.test(value)) throw AppException.invalidField('index', 'must be the position of a file (0, 1, …)');
  return Number(value);
}
