import { Body, Controller, Delete, Get, HttpCode, HttpStatus, Param, Patch, Post, Query } from '@nestjs/common';
import {
  ApiAcceptedResponse,
  ApiBadRequestResponse,
  ApiConflictResponse,
  ApiCreatedResponse,
  ApiExtraModels,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiParam,
  ApiTags,
  getSchemaPath,
} from '@nestjs/swagger';
import type { AuthContext } from '../auth/auth-context';
import { Auth } from '../auth/auth.decorator';
import { CurrentAuth } from '../auth/current-auth.decorator';
import { ErrorBodyDto } from '../common/errors/error-body';
import { SuccessResponseDto } from '../common/http/success-response.dto';
import {
  CreatedWebhookDto,
  CreateWebhookDto,
  ListDeliveriesQueryDto,
  RotatedSecretDto,
  UpdateWebhookDto,
  WebhookDeliveryDto,
  WebhookDeliveryListDto,
  WebhookDto,
  WebhookListDto,
} from './dto/webhook.dto';
import { RecoverDeliveriesDto, RecoveredDeliveriesDto, WebhookEventDto } from './dto/webhook-lifecycle.dto';
import { RECOVER_MAX_PER_CALL, WebhooksService } from './webhooks.service';

const DEFAULT_PAGE_SIZE = 50;
const ID_PARAM = { name: 'id', example: 'whk_4fQ2mT0kLw2sZr8NcY1pXb' };
const READ = { keyTypes: ['admin', 'usage'], permission: 'webhooks.read' } as const;
const WRITE = { keyTypes: ['admin', 'usage'], permission: 'webhooks.write' } as const;

const DELIVERY_DESCRIPTION =
  'Each event is POSTed as JSON `{id, type, timestamp, …}` with the Standard Webhooks headers `webhook-id` (the event ' +
  'id, repeated by retries and replays), `webhook-timestamp` and `webhook-signature`. A 2xx answer within the time-out ' +
  'is a success; anything else (redirects included: they are not followed) is retried after about 5 s, 5 min, 30 min, ' +
  '2 h, 5 h, 10 h and 10 h, then the delivery is failed. A `410 Gone` answer is not retried and disables the webhook, ' +
  'as do failures only for 5 days (by default); each disable sends a `webhook.disabled` event to the account’s other ' +
  'webhooks subscribed to it and an email to the account’s billing contact. An event whose body would be larger than ' +
  '256 KB (by default) is sent thin: its short fields, `thin: true`, `fullEventBytes` and `fullEventUrl`, which ' +
  'answers the whole event.';

@ApiTags('Webhooks')
@Controller('email/webhooks')
export class WebhooksController {
  constructor(private readonly webhooks: WebhooksService) {}

  @Post()
  @Auth(WRITE)
  @ApiOperation({ summary: 'Register a webhook', description: `The answer carries the signing secret, once. ${DELIVERY_DESCRIPTION}` })
  @ApiCreatedResponse({ type: CreatedWebhookDto })
  @ApiBadRequestResponse({
    type: ErrorBodyDto,
    description: 'Bad URL (not http(s), credentials, private address, does not resolve) or events',
  })
  async create(@CurrentAuth() auth: AuthContext, @Body() dto: CreateWebhookDto): Promise<CreatedWebhookDto> {
    const { webhook, secret } = await this.webhooks.create(auth.accountId, dto);
    return { ...WebhookDto.from(webhook), secret };
  }

  @Get()
  @Auth(READ)
  @ApiOperation({ summary: 'List the account’s webhooks', description: 'Secrets are never shown again.' })
  @ApiOkResponse({ type: WebhookListDto })
  async list(@CurrentAuth() auth: AuthContext): Promise<WebhookListDto> {
    return { webhooks: (await this.webhooks.list(auth.accountId)).map(WebhookDto.from) };
  }

  @Get('events/:eventId')
  @Auth(READ)
  @ApiOperation({
    summary: 'Read an event as webhooks get it',
    description:
      'The whole event, as its webhooks would have got it: `fullEventUrl` of a thin event points here. Events stay as ' +
      'long as their deliveries stay in the delivery log.',
  })
  @ApiParam({ name: 'eventId', example: 'evt_2Lq9mT0kLw2sZr8NcY1pXb' })
  @ApiExtraModels(WebhookEventDto)
  @ApiOkResponse({
    schema: { allOf: [{ $ref: getSchemaPath(WebhookEventDto) }], additionalProperties: true },
    description: '`id`, `type` and `timestamp`, then the fields of the event type',
  })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  event(@CurrentAuth() auth: AuthContext, @Param('eventId') eventId: string): Promise<Record<string, unknown>> {
    return this.webhooks.event(auth.accountId, eventId);
  }

  @Get(':id')
  @Auth(READ)
  @ApiOperation({ summary: 'Read a webhook' })
  @ApiParam(ID_PARAM)
  @ApiOkResponse({ type: WebhookDto })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  async get(@CurrentAuth() auth: AuthContext, @Param('id') id: string): Promise<WebhookDto> {
    return WebhookDto.from(await this.webhooks.get(auth.accountId, id));
  }

  @Patch(':id')
  @Auth(WRITE)
  @ApiOperation({
    summary: 'Change a webhook',
    description: 'The fields given replace the stored ones; a new url is checked like at registration.',
  })
  @ApiParam(ID_PARAM)
  @ApiOkResponse({ type: WebhookDto })
  @ApiBadRequestResponse({ type: ErrorBodyDto })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  async update(@CurrentAuth() auth: AuthContext, @Param('id') id: string, @Body() dto: UpdateWebhookDto): Promise<WebhookDto> {
    return WebhookDto.from(await this.webhooks.update(auth.accountId, id, dto));
  }

  @Delete(':id')
  @Auth(WRITE)
  @ApiOperation({ summary: 'Delete a webhook', description: 'Its delivery log goes with it; nothing more is sent to it.' })
  @ApiParam(ID_PARAM)
  @ApiOkResponse({ type: SuccessResponseDto })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  async remove(@CurrentAuth() auth: AuthContext, @Param('id') id: string): Promise<SuccessResponseDto> {
    const webhook = await this.webhooks.remove(auth.accountId, id);
    return { success: true, message: `Webhook ${webhook.id} deleted` };
  }

  @Post(':id/rotate-secret')
  @HttpCode(HttpStatus.OK)
  @Auth(WRITE)
  @ApiOperation({
    summary: 'Rotate the signing secret',
    description:
      'Returns the new secret, once. For 24 h the old one signs too (both signatures in `webhook-signature`), so receivers can switch at leisure.',
  })
  @ApiParam(ID_PARAM)
  @ApiOkResponse({ type: RotatedSecretDto })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  async rotateSecret(@CurrentAuth() auth: AuthContext, @Param('id') id: string): Promise<RotatedSecretDto> {
    const { secret, previousSecretExpiresAt } = await this.webhooks.rotateSecret(auth.accountId, id);
    return { id, secret, previousSecretExpiresAt: previousSecretExpiresAt.toISOString() };
  }

  @Get(':id/deliveries')
  @Auth(READ)
  @ApiOperation({ summary: 'The webhook’s delivery log', description: 'Newest first, a page at a time; each delivery with every attempt.' })
  @ApiParam(ID_PARAM)
  @ApiOkResponse({ type: WebhookDeliveryListDto })
  @ApiBadRequestResponse({ type: ErrorBodyDto })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  async deliveries(
    @CurrentAuth() auth: AuthContext,
    @Param('id') id: string,
    @Query() query: ListDeliveriesQueryDto,
  ): Promise<WebhookDeliveryListDto> {
    const page = await this.webhooks.listDeliveries(auth.accountId, id, {
      limit: query.limit ?? DEFAULT_PAGE_SIZE,
      cursor: query.cursor,
      status: query.status,
    });
    return {
      deliveries: page.deliveries.map(({ delivery, attempts }) => WebhookDeliveryDto.from(delivery, attempts)),
      nextCursor: page.nextCursor,
    };
  }

  @Post(':id/deliveries/:deliveryId/replay')
  @HttpCode(HttpStatus.ACCEPTED)
  @Auth(WRITE)
  @ApiOperation({
    summary: 'Deliver an event again',
    description:
      'Same event id, same payload, the whole retry schedule again; the attempts are added to the delivery’s log. Whatever ' +
      'the delivery’s state (succeeded, failed, or waiting for a retry’s backoff), the next attempt is made now; an ' +
      'attempt already in flight is that attempt (one request at a time per delivery).',
  })
  @ApiParam(ID_PARAM)
  @ApiParam({ name: 'deliveryId', example: 'whd_8Jk2mT0kLw2sZr8NcY1pXb' })
  @ApiAcceptedResponse({ type: WebhookDeliveryDto })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  @ApiConflictResponse({ type: ErrorBodyDto, description: 'The webhook is disabled' })
  async replay(
    @CurrentAuth() auth: AuthContext,
    @Param('id') id: string,
    @Param('deliveryId') deliveryId: string,
  ): Promise<WebhookDeliveryDto> {
    const { delivery, attempts } = await this.webhooks.replay(auth.accountId, id, deliveryId);
    return WebhookDeliveryDto.from(delivery, attempts);
  }

  @Post(':id/recover')
  @HttpCode(HttpStatus.ACCEPTED)
  @Auth(WRITE)
  @ApiOperation({
    summary: 'Deliver again every failed event since a time',
    description:
      'Replays each failed delivery of the webhook whose event came in the window, oldest first, like a replay of ' +
      `each. At most ${RECOVER_MAX_PER_CALL} per call: while \`more\` is true, call again with the same since and until ` +
      '(those queued are no longer failed, so none is queued twice).',
  })
  @ApiParam(ID_PARAM)
  @ApiAcceptedResponse({ type: RecoveredDeliveriesDto })
  @ApiBadRequestResponse({ type: ErrorBodyDto, description: 'since or until is not a date-time, or until is not after since' })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  @ApiConflictResponse({ type: ErrorBodyDto, description: 'The webhook is disabled' })
  async recover(
    @CurrentAuth() auth: AuthContext,
    @Param('id') id: string,
    @Body() dto: RecoverDeliveriesDto,
  ): Promise<RecoveredDeliveriesDto> {
    const { queued, more, since, until } = await this.webhooks.recover(auth.accountId, id, dto);
    return { queued, more, since: since.toISOString(), until: until.toISOString() };
  }
}
