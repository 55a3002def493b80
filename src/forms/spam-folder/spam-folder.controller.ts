import { Controller, HttpCode, Param, Post } from '@nestjs/common';
import { ApiConflictResponse, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { AuthContext } from '../../auth/auth-context';
import { Auth } from '../../auth/auth.decorator';
import { CurrentAuth } from '../../auth/current-auth.decorator';
import { ErrorBodyDto } from '../../common/errors/error-body';
import { SubmissionDto } from '../dto/form.dto';
import { SubmissionNotificationDto } from '../notifications/notification.dto';
import { SubmissionNotifications } from '../notifications/submission-notifications';
import { SpamFolderService } from './spam-folder.service';

/** The spam folder of a form: listed with GET /api/forms/{id}/submissions?spam=true, released here. */
@ApiTags('Forms')
@Controller('api/forms')
export class SpamFolderController {
  constructor(
    private readonly spamFolder: SpamFolderService,
    private readonly notifications: SubmissionNotifications,
  ) {}

  @Post(':id/submissions/:submissionId/not-spam')
  @HttpCode(200)
  @Auth({ keyTypes: ['admin', 'usage'], permission: 'forms.write' })
  @ApiOperation({
    summary: 'Release a submission from the spam folder',
    description:
      'Marks a spam submission accepted and sends its notification to the form’s recipients (no acknowledgment to the ' +
      'visitor), with the form.submission webhook event; it now counts as a submission. Calling it again answers the ' +
      'accepted submission unchanged.',
  })
  @ApiOkResponse({ type: SubmissionDto, description: 'The submission, accepted, with its notification' })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  @ApiConflictResponse({ type: ErrorBodyDto, description: 'The submission is held (an unconfirmed instant form), or being released' })
  async notSpam(
    @CurrentAuth() auth: AuthContext,
    @Param('id') id: string,
    @Param('submissionId') submissionId: string,
  ): Promise<SubmissionDto> {
    const submission = await this.spamFolder.notSpam(auth.accountId, id, submissionId);
    const notifications = await this.notifications.ofPage(auth.accountId, [submission]);
    return SubmissionDto.from(submission, SubmissionNotificationDto.from(notifications.get(submission.id)!));
  }
}
