import { Body, Controller, Headers, HttpCode, Post, UseGuards, UseInterceptors } from '@nestjs/common';
import {
  ApiAcceptedResponse,
  ApiBadRequestResponse,
  ApiBody,
  ApiConflictResponse,
  ApiExtraModels,
  ApiHeader,
  ApiOperation,
  ApiTags,
  ApiUnauthorizedResponse,
  ApiUnsupportedMediaTypeResponse,
  getSchemaPath,
} from '@nestjs/swagger';
import { Public } from '../auth/auth.decorator';
import { ErrorBodyDto } from '../common/errors/error-body';
import { ProviderEventDto, ProviderEventsDto, ProviderEventsResultDto } from './dto/provider-events.dto';
import { MAX_PROVIDER_EVENTS } from './provider-event-rules';
import { ProviderEventsBodyInterceptor } from './provider-events-body.interceptor';
import { ProviderEventsService } from './provider-events.service';
import { ProviderSignatureGuard } from './provider-signature.guard';

const DESCRIPTION = [
  'Called by the delivery provider, not by API keys. Signed with [Standard Webhooks](https://www.standardwebhooks.com/): ',
  '`webhook-signature: v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<raw body>">` keyed with the UTF-8 ',
  'bytes of env `PROVIDER_WEBHOOK_SECRET` (the secret as written, not base64-decoded); `webhook-timestamp` (Unix seconds) ',
  'must be within 5 minutes of now. A missing, wrong or stale signature, or no secret configured, is 401 `SIGNATURE_INVALID`.\n\n',
  `The body is one event, an array of events, or \`{"events": [...]}\` (at most ${MAX_PROVIDER_EVENTS}). `,
  '`delivered` moves a `sent` message to `delivered`; `bounced` (permanent) moves the message to `bounced` once every ',
  'recipient has bounced, and suppresses the recipient unless the SMTP codes in its `reason` say the failure is not about ',
  'the address (only 5.1.1, 5.1.2, 5.1.3, 5.1.10, 5.2.1, or a bare 550/551/553 are; a bounce without any code is taken as ',
  'one); a soft bounce (`bounceType: soft`, only 4.x.x codes, or a full mailbox: 5.2.x but 5.2.1, a bare 552) is counted ',
  'instead, and `SOFT_BOUNCE_SUPPRESS_COUNT` ',
  'of them within `SOFT_BOUNCE_WINDOW_DAYS` suppress (a `delivered` resets the count); `complained` suppresses the ',
  'recipient; `deferred`, `opened` and `clicked` are ',
  'recorded only. A status never goes back. A message is named by `returnPath` (our VERP address) or our `msg_…` id; ',
  'a Message-ID only when exactly one message with it went to `recipient`. Events of unknown messages are ignored ',
  '(still 202). A call is applied whole (or, on an error, not at all) and once per ',
  '`webhook-id` (remembered 24 h): a retry answers `duplicate: true` and changes nothing.',
].join('');

@ApiTags('Provider events')
@Controller('provider/events')
export class ProviderEventsController {
  constructor(private readonly providerEvents: ProviderEventsService) {}

  @Post()
  @HttpCode(202)
  @Public()
  @UseGuards(ProviderSignatureGuard)
  @UseInterceptors(ProviderEventsBodyInterceptor)
  @ApiOperation({ summary: 'Delivery provider events (signed)', description: DESCRIPTION })
  @ApiHeader({ name: 'webhook-id', required: true, description: 'Unique per call; a retry repeats it.' })
  @ApiHeader({ name: 'webhook-timestamp', required: true, description: 'Unix seconds, within 5 minutes of now.' })
  @ApiHeader({ name: 'webhook-signature', required: true, description: '`v1,<base64 signature>`; several space-separated are allowed.' })
  @ApiExtraModels(ProviderEventDto, ProviderEventsDto)
  @ApiBody({
    schema: {
      oneOf: [
        { $ref: getSchemaPath(ProviderEventDto) },
        { type: 'array', items: { $ref: getSchemaPath(ProviderEventDto) }, maxItems: MAX_PROVIDER_EVENTS },
        { $ref: getSchemaPath(ProviderEventsDto) },
      ],
    },
  })
  @ApiAcceptedResponse({ type: ProviderEventsResultDto })
  @ApiBadRequestResponse({ description: 'A bad event, named as `events[i].field`', type: ErrorBodyDto })
  @ApiUnauthorizedResponse({ description: 'Signature missing, wrong or stale', type: ErrorBodyDto })
  @ApiConflictResponse({ description: 'A call with the same webhook-id is being applied right now; retry', type: ErrorBodyDto })
  @ApiUnsupportedMediaTypeResponse({ description: 'The body is not application/json', type: ErrorBodyDto })
  receive(@Headers('webhook-id') webhookId: string, @Body() body: ProviderEventsDto): Promise<ProviderEventsResultDto> {
    return this.providerEvents.receive(webhookId, body.events);
  }
}
