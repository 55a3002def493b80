import { Body, Controller, Delete, Get, HttpCode, HttpStatus, Param, Patch, Post, Query } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiBody,
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
import { PageQueryDto } from '../common/http/page-query.dto';
import { SuccessResponseDto } from '../common/http/success-response.dto';
import { CreateListDto, ListDto, ListPageDto, UpdateListDto } from './dto/list.dto';
import {
  AddSubscribersDto,
  AddSubscribersResultDto,
  ListSubscribersQueryDto,
  MAX_SUBSCRIBERS_PER_CALL,
  SubscriberDto,
  SubscriberInputDto,
  SubscriberPageDto,
} from './dto/subscriber.dto';
import { ListsService, ListSummary } from './lists.service';

const DEFAULT_PAGE_SIZE = 50;
const LIST_ID = { name: 'listId', example: 'list_4fQ2mT0kLw2sZr8NcY1pXb' };
const READ = { keyTypes: ['admin', 'usage'], permission: 'lists.read' } as const;
const WRITE = { keyTypes: ['admin', 'usage'], permission: 'lists.write' } as const;

const present = ({ list, subscribers }: ListSummary): ListDto => ListDto.from(list, subscribers);

@ApiTags('Lists')
@Controller('email/lists')
export class ListsController {
  constructor(private readonly lists: ListsService) {}

  @Post()
  @Auth(WRITE)
  @ApiOperation({ summary: 'Create a mailing list', description: 'Send to its subscribers with POST /email/send and `list`.' })
  @ApiCreatedResponse({ type: ListDto })
  @ApiBadRequestResponse({ type: ErrorBodyDto })
  @ApiConflictResponse({ type: ErrorBodyDto, description: 'The account has a list with that name' })
  async create(@CurrentAuth() auth: AuthContext, @Body() dto: CreateListDto): Promise<ListDto> {
    return present(await this.lists.create(auth.accountId, dto));
  }

  @Get()
  @Auth(READ)
  @ApiOperation({ summary: 'List the account’s mailing lists, newest first, a page at a time' })
  @ApiOkResponse({ type: ListPageDto })
  @ApiBadRequestResponse({ type: ErrorBodyDto })
  async list(@CurrentAuth() auth: AuthContext, @Query() query: PageQueryDto): Promise<ListPageDto> {
    const page = await this.lists.list(auth.accountId, { limit: query.limit ?? DEFAULT_PAGE_SIZE, cursor: query.cursor });
    return { lists: page.lists.map(present), nextCursor: page.nextCursor };
  }

  @Get(':listId')
  @Auth(READ)
  @ApiOperation({ summary: 'Read a mailing list with its subscriber counts' })
  @ApiParam(LIST_ID)
  @ApiOkResponse({ type: ListDto })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  async get(@CurrentAuth() auth: AuthContext, @Param('listId') listId: string): Promise<ListDto> {
    return present(await this.lists.summary(auth.accountId, listId));
  }

  @Patch(':listId')
  @Auth(WRITE)
  @ApiOperation({
    summary: 'Rename or describe a mailing list',
    description: 'Fields left out keep their value; description null removes it.',
  })
  @ApiParam(LIST_ID)
  @ApiOkResponse({ type: ListDto })
  @ApiBadRequestResponse({ type: ErrorBodyDto })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  @ApiConflictResponse({ type: ErrorBodyDto, description: 'Renamed to a name the account uses already' })
  async update(@CurrentAuth() auth: AuthContext, @Param('listId') listId: string, @Body() dto: UpdateListDto): Promise<ListDto> {
    return present(await this.lists.update(auth.accountId, listId, dto));
  }

  @Delete(':listId')
  @Auth(WRITE)
  @ApiOperation({ summary: 'Delete a mailing list with its subscribers', description: 'Messages already accepted for it are still sent.' })
  @ApiParam(LIST_ID)
  @ApiOkResponse({ type: SuccessResponseDto })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  async remove(@CurrentAuth() auth: AuthContext, @Param('listId') listId: string): Promise<SuccessResponseDto> {
    const list = await this.lists.remove(auth.accountId, listId);
    return { success: true, message: `List ${list.name} deleted` };
  }

  @Post(':listId/subscribers')
  @HttpCode(HttpStatus.OK)
  @Auth(WRITE)
  @ApiOperation({
    summary: 'Add subscribers',
    description:
      `An array [{email, name}] or {"subscribers": [...]}, at most ${MAX_SUBSCRIBERS_PER_CALL} entries (more: 400). ` +
      'Addresses are deduplicated case-insensitively, within the call and against the list; one on the list already keeps ' +
      'its status (an unsubscribed address is not re-subscribed) and takes the name given. Invalid entries are listed in ' +
      '`invalid` by index; the valid ones are added all the same.',
  })
  @ApiParam(LIST_ID)
  @ApiExtraModels(AddSubscribersDto, SubscriberInputDto)
  @ApiBody({
    schema: {
      oneOf: [
        { type: 'array', items: { $ref: getSchemaPath(SubscriberInputDto) }, maxItems: MAX_SUBSCRIBERS_PER_CALL },
        { $ref: getSchemaPath(AddSubscribersDto) },
      ],
    },
  })
  @ApiOkResponse({ type: AddSubscribersResultDto })
  @ApiBadRequestResponse({ type: ErrorBodyDto, description: 'Not an array of subscribers, none, or more than 1000' })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  addSubscribers(
    @CurrentAuth() auth: AuthContext,
    @Param('listId') listId: string,
    // Checked entry by entry in the service (a bad entry must not reject the others), so not a DTO here.
    @Body() body: unknown,
  ): Promise<AddSubscribersResultDto> {
    return this.lists.addSubscribers(auth.accountId, listId, body);
  }

  @Get(':listId/subscribers')
  @Auth(READ)
  @ApiOperation({ summary: 'List subscribers in address order, a page at a time' })
  @ApiParam(LIST_ID)
  @ApiOkResponse({ type: SubscriberPageDto })
  @ApiBadRequestResponse({ type: ErrorBodyDto })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  async subscribers(
    @CurrentAuth() auth: AuthContext,
    @Param('listId') listId: string,
    @Query() query: ListSubscribersQueryDto,
  ): Promise<SubscriberPageDto> {
    const page = await this.lists.listSubscribers(auth.accountId, listId, {
      limit: query.limit ?? DEFAULT_PAGE_SIZE,
      cursor: query.cursor,
      status: query.status,
    });
    return { subscribers: page.subscribers.map(SubscriberDto.from), nextCursor: page.nextCursor };
  }

  @Delete(':listId/subscribers/:email')
  @Auth(WRITE)
  @ApiOperation({
    summary: 'Remove a subscriber',
    description: 'To keep an address from being added again, unsubscribe it or suppress it instead.',
  })
  @ApiParam(LIST_ID)
  @ApiParam({ name: 'email', example: 'ada@example.org', description: 'URL-encoded; matched case-insensitively' })
  @ApiOkResponse({ type: SuccessResponseDto })
  @ApiNotFoundResponse({ type: ErrorBodyDto, description: 'Unknown list, or the address is not on it' })
  async removeSubscriber(
    @CurrentAuth() auth: AuthContext,
    @Param('listId') listId: string,
    @Param('email') email: string,
  ): Promise<SuccessResponseDto> {
    const address = await this.lists.removeSubscriber(auth.accountId, listId, email);
    return { success: true, message: `${address} removed from the list` };
  }
}
