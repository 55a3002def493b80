import { Controller, Get, Param } from '@nestjs/common';
import { ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import type { AuthContext } from '../../auth/auth-context';
import { Auth } from '../../auth/auth.decorator';
import { CurrentAuth } from '../../auth/current-auth.decorator';
import { ErrorBodyDto } from '../../common/errors/error-body';
import { ListSendDto } from './dto/list-send.dto';
import { ListSendsService } from './list-sends.service';

@ApiTags('Lists')
@Controller('email/lists/:listId/sends')
export class ListSendsController {
  constructor(private readonly listSends: ListSendsService) {}

  @Get(':listSendId')
  @Auth({ keyTypes: ['admin', 'usage'], permission: 'email.read' })
  @ApiOperation({
    summary: 'Progress of a list send',
    description:
      'Started by POST /email/send with `list`: how many messages are made so far, how many subscribers were skipped, and ' +
      'whether a quota stopped it or making its messages kept failing (failed, with lastError). It can still be read after ' +
      'its list is deleted.',
  })
  @ApiParam({ name: 'listId', example: 'list_4fQ2mT0kLw2sZr8NcY1pXb' })
  @ApiParam({ name: 'listSendId', example: 'lsnd_4fQ2mT0kLw2sZr8NcY1pXb' })
  @ApiOkResponse({ type: ListSendDto })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  async get(
    @CurrentAuth() auth: AuthContext,
    @Param('listId') listId: string,
    @Param('listSendId') listSendId: string,
  ): Promise<ListSendDto> {
    return ListSendDto.from(await this.listSends.get(auth.accountId, listId, listSendId));
  }
}
