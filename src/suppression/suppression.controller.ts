import { Body, Controller, Delete, Get, Param, Post, Query, Res } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiCreatedResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiParam,
  ApiTags,
} from '@nestjs/swagger';
import type { Response } from 'express';
import type { AuthContext } from '../auth/auth-context';
import { Auth } from '../auth/auth.decorator';
import { CurrentAuth } from '../auth/current-auth.decorator';
import { normalizeEmailAddress } from '../common/email-address';
import { ErrorBodyDto } from '../common/errors/error-body';
import { SuccessResponseDto } from '../common/http/success-response.dto';
import {
  AddSuppressionDto,
  AddSuppressionResponseDto,
  CheckSuppressionQueryDto,
  ListSuppressionQueryDto,
  SuppressionCheckDto,
  SuppressionEntryDto,
  SuppressionListDto,
} from './dto/suppression.dto';
import { SuppressionService } from './suppression.service';

const DEFAULT_PAGE_SIZE = 50;

@ApiTags('Suppression')
@Controller('email/suppression')
export class SuppressionController {
  constructor(private readonly suppression: SuppressionService) {}

  @Post()
  @Auth({ keyTypes: ['admin', 'usage'], permission: 'suppression.write' })
  @ApiOperation({
    summary: 'Add an address to the suppression list',
    description:
      'Sends to it are dropped from then on. 201 when added; 200 with created false when the address is on the list ' +
      'already (its first entry is kept).',
  })
  @ApiCreatedResponse({ type: AddSuppressionResponseDto })
  @ApiOkResponse({ type: AddSuppressionResponseDto, description: 'Already on the list' })
  @ApiBadRequestResponse({ type: ErrorBodyDto })
  async add(
    @CurrentAuth() auth: AuthContext,
    @Body() dto: AddSuppressionDto,
    @Res({ passthrough: true }) res: Response,
  ): Promise<AddSuppressionResponseDto> {
    const { entry, created } = await this.suppression.upsert(auth.accountId, dto.email, dto.reason ?? 'manual', 'api');
    res.status(created ? 201 : 200);
    return { success: true, created, entry: SuppressionEntryDto.from(entry) };
  }

  @Get('check')
  @Auth({ keyTypes: ['admin', 'usage'], permission: 'suppression.read' })
  @ApiOperation({ summary: 'Is an address suppressed?' })
  @ApiOkResponse({ type: SuppressionCheckDto })
  @ApiBadRequestResponse({ type: ErrorBodyDto })
  async check(@CurrentAuth() auth: AuthContext, @Query() query: CheckSuppressionQueryDto): Promise<SuppressionCheckDto> {
    const entry = await this.suppression.find(auth.accountId, query.email);
    const email = normalizeEmailAddress(query.email);
    if (!entry) return { email, suppressed: false };
    return { email, suppressed: true, reason: entry.reason, createdAt: entry.createdAt.toISOString() };
  }

  @Get()
  @Auth({ keyTypes: ['admin', 'usage'], permission: 'suppression.read' })
  @ApiOperation({ summary: 'List suppressed addresses, newest first, a page at a time' })
  @ApiOkResponse({ type: SuppressionListDto })
  @ApiBadRequestResponse({ type: ErrorBodyDto })
  async list(@CurrentAuth() auth: AuthContext, @Query() query: ListSuppressionQueryDto): Promise<SuppressionListDto> {
    const page = await this.suppression.list(auth.accountId, {
      limit: query.limit ?? DEFAULT_PAGE_SIZE,
      cursor: query.cursor,
      reason: query.reason,
    });
    return { entries: page.entries.map(SuppressionEntryDto.from), count: page.total, nextCursor: page.nextCursor };
  }

  @Delete(':email')
  @Auth({ keyTypes: ['admin', 'usage'], permission: 'suppression.write' })
  @ApiOperation({ summary: 'Take an address off the suppression list', description: 'Sends to it go out again.' })
  @ApiParam({ name: 'email', example: 'ada@example.org', description: 'URL-encoded; matched case-insensitively' })
  @ApiOkResponse({ type: SuccessResponseDto })
  @ApiNotFoundResponse({ type: ErrorBodyDto, description: 'The address is not on the list' })
  async remove(@CurrentAuth() auth: AuthContext, @Param('email') email: string): Promise<SuccessResponseDto> {
    const entry = await this.suppression.remove(auth.accountId, email);
    return { success: true, message: `${entry.email} removed from the suppression list` };
  }
}
