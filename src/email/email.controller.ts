import { Body, Controller, Delete, Get, HttpCode, Param, Post } from '@nestjs/common';
import { ApiExtraModels, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiTags, getSchemaPath } from '@nestjs/swagger';
import type { AuthContext } from '../auth/auth-context';
import { Auth } from '../auth/auth.decorator';
import { CurrentAuth } from '../auth/current-auth.decorator';
import { ErrorBodyDto } from '../common/errors/error-body';
import { IdempotencyClaimOf, Idempotent } from '../common/idempotency/idempotent.decorator';
import { ApiQuotaExceededResponse } from '../quotas/quota-docs';
import type { IdempotencyClaim } from '../common/idempotency/idempotency.store';
import { BatchSendDto, BatchSendResponseDto } from './batch/batch-send.dto';
import { BatchSendsService } from './batch/batch-sends.service';
import { MessageStatusDto } from './dto/message-status.dto';
import { SendEmailResponseDto } from './dto/send-email-response.dto';
import { SendEmailDto } from './dto/send-email.dto';
import { EmailService } from './email.service';
import { ListSendAcceptedDto } from './list-sends/dto/list-send.dto';
import { ListSendsService } from './list-sends/list-sends.service';

const SEND_DESCRIPTION =
  'Accepts the message once it is stored (status `queued`, or `scheduled` with a future scheduleFor); ' +
  'delivery happens in the background: follow it at GET /email/status/{messageId}. `from` must be on a ' +
  'verified domain (403 DOMAIN_NOT_VERIFIED); suppressed recipients are dropped and listed in `suppressed` ' +
  '(422 ALL_RECIPIENTS_SUPPRESSED if none remain); a bad address is 400 INVALID_RECIPIENT; more than 25 MB of ' +
  'attachments or 10 MB of message is 413. With `list` instead of `to`: a list send, one message per subscribed and ' +
  'unsuppressed subscriber, made in the background; the answer counts them (`queued`) and names the list send ' +
  '(GET /email/lists/{listId}/sends/{listSendId}); an unknown list is 404.';

const BATCH_DESCRIPTION =
  'One message per recipient (its own messageId), each rendered with its own variables plus email, name and unsubscribeUrl; inline ' +
  'subject, html and text are Handlebars too. All are accepted in one commit, answered in recipient order. An invalid ' +
  'recipient refuses the whole call (400 naming recipients[i].email, nothing sent); a suppressed one is answered ' +
  '`suppressed` with messageId null. Each message carries List-Unsubscribe (one-click) unless `tracking.unsubscribe` is false.';

@ApiTags('Email')
@Controller()
export class EmailController {
  constructor(
    private readonly email: EmailService,
    private readonly listSends: ListSendsService,
    private readonly batches: BatchSendsService,
  ) {}

  @Post(['email/send', 'api/email/send', 'v1/send'])
  @HttpCode(200)
  @Auth({ keyTypes: ['admin', 'usage'], permission: 'email.send' })
  @Idempotent()
  @ApiOperation({ summary: 'Send an email', description: SEND_DESCRIPTION })
  @ApiExtraModels(SendEmailResponseDto, ListSendAcceptedDto)
  @ApiOkResponse({ schema: { oneOf: [{ $ref: getSchemaPath(SendEmailResponseDto) }, { $ref: getSchemaPath(ListSendAcceptedDto) }] } })
  @ApiQuotaExceededResponse()
  send(
    @CurrentAuth() auth: AuthContext,
    @Body() dto: SendEmailDto,
    @IdempotencyClaimOf() idempotency?: IdempotencyClaim,
  ): Promise<SendEmailResponseDto | ListSendAcceptedDto> {
    const options = { allowedFromDomains: auth.restrictions.domain_restrictions, idempotency };
    return dto.list === undefined ? this.email.send(auth.accountId, dto, options) : this.listSends.start(auth.accountId, dto, options);
  }

  @Post('email/batch')
  @HttpCode(200)
  @Auth({ keyTypes: ['admin', 'usage'], permission: 'email.send' })
  @Idempotent()
  @ApiOperation({ summary: 'Send one message to each of up to 500 recipients', description: BATCH_DESCRIPTION })
  @ApiOkResponse({ type: BatchSendResponseDto })
  @ApiQuotaExceededResponse()
  batch(
    @CurrentAuth() auth: AuthContext,
    @Body() dto: BatchSendDto,
    @IdempotencyClaimOf() idempotency?: IdempotencyClaim,
  ): Promise<BatchSendResponseDto> {
    return this.batches.send(auth.accountId, dto, { allowedFromDomains: auth.restrictions.domain_restrictions, idempotency });
  }

  @Get('email/status/:messageId')
  @Auth({ keyTypes: ['admin', 'usage'], permission: 'email.read' })
  @ApiOperation({ summary: 'Status of a message', description: 'The current status and every event with its time, oldest first.' })
  @ApiOkResponse({ type: MessageStatusDto })
  @ApiNotFoundResponse({ type: ErrorBodyDto, description: 'No message with this id in the account' })
  status(@CurrentAuth() auth: AuthContext, @Param('messageId') messageId: string): Promise<MessageStatusDto> {
    return this.email.status(auth.accountId, messageId);
  }

  @Delete('email/scheduled/:messageId')
  @Auth({ keyTypes: ['admin', 'usage'], permission: 'email.send' })
  @ApiOperation({ summary: 'Cancel a scheduled message', description: 'Only while it waits for its time; afterwards 409 CONFLICT.' })
  @ApiOkResponse({ type: MessageStatusDto })
  @ApiNotFoundResponse({ type: ErrorBodyDto, description: 'No message with this id in the account' })
  cancel(@CurrentAuth() auth: AuthContext, @Param('messageId') messageId: string): Promise<MessageStatusDto> {
    return this.email.cancelScheduled(auth.accountId, messageId);
  }
}
