import { Body, Controller, Delete, Get, HttpCode, Param, Post } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { AuthContext } from '../common/auth/auth-context';
import { Auth } from '../common/auth/auth.decorator';
import { CurrentAuth } from '../common/auth/current-auth.decorator';
import { IdempotencyClaimOf, Idempotent } from '../common/idempotency/idempotent.decorator';
import type { IdempotencyClaim } from '../common/idempotency/idempotency.store';
import { MessageStatusDto } from './dto/message-status.dto';
import { SendEmailResponseDto } from './dto/send-email-response.dto';
import { SendEmailDto } from './dto/send-email.dto';
import { EmailService } from './email.service';

const SEND_DESCRIPTION =
  'Accepts the message once it is stored (status `queued`, or `scheduled` with a future scheduleFor); ' +
  'delivery happens in the background: follow it at GET /email/status/{messageId}. `from` must be on a ' +
  'verified domain (403 DOMAIN_NOT_VERIFIED); suppressed recipients are dropped and listed in `suppressed` ' +
  '(422 ALL_RECIPIENTS_SUPPRESSED if none remain); a bad address is 400 INVALID_RECIPIENT; more than 25 MB of ' +
  'attachments or 10 MB of message is 413.';

@ApiTags('Email')
@Controller()
export class EmailController {
  constructor(private readonly email: EmailService) {}

  @Post(['email/send', 'api/email/send', 'v1/send'])
  @HttpCode(200)
  @Auth({ keyTypes: ['admin', 'usage'], permission: 'email.send' })
  @Idempotent()
  @ApiOperation({ summary: 'Send an email', description: SEND_DESCRIPTION })
  @ApiOkResponse({ type: SendEmailResponseDto })
  send(
    @CurrentAuth() auth: AuthContext,
    @Body() dto: SendEmailDto,
    @IdempotencyClaimOf() idempotency?: IdempotencyClaim,
  ): Promise<SendEmailResponseDto> {
    return this.email.send(auth.accountId, dto, { allowedFromDomains: auth.restrictions.domain_restrictions, idempotency });
  }

  @Get('email/status/:messageId')
  @Auth({ keyTypes: ['admin', 'usage'], permission: 'email.read' })
  @ApiOperation({ summary: 'Status of a message', description: 'The current status and every event with its time, oldest first.' })
  @ApiOkResponse({ type: MessageStatusDto })
  status(@CurrentAuth() auth: AuthContext, @Param('messageId') messageId: string): Promise<MessageStatusDto> {
    return this.email.status(auth.accountId, messageId);
  }

  @Delete('email/scheduled/:messageId')
  @Auth({ keyTypes: ['admin', 'usage'], permission: 'email.send' })
  @ApiOperation({ summary: 'Cancel a scheduled message', description: 'Only while it waits for its time; afterwards 409 CONFLICT.' })
  @ApiOkResponse({ type: MessageStatusDto })
  cancel(@CurrentAuth() auth: AuthContext, @Param('messageId') messageId: string): Promise<MessageStatusDto> {
    return this.email.cancelScheduled(auth.accountId, messageId);
  }
}
