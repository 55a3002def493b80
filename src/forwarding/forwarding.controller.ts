import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiBadRequestResponse, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import type { AuthContext } from '../auth/auth-context';
import { Auth } from '../auth/auth.decorator';
import { CurrentAuth } from '../auth/current-auth.decorator';
import { ErrorBodyDto } from '../common/errors/error-body';
import { ForwardingResolutionDto, ResolveForwardingQueryDto } from './dto/forwarding-resolution.dto';
import { ForwardingService } from './forwarding.service';

@ApiTags('Domains')
@Controller('domains')
export class ForwardingController {
  constructor(private readonly forwarding: ForwardingService) {}

  @Get(':domain/forwarding/resolve')
  @Auth({ keyTypes: ['admin'], permission: 'domains.read' })
  @ApiOperation({
    summary: 'Which forwarding rule an address matches',
    description:
      'The exact alias wins, then the alias without a +tag, then `*`. Says where mail for the address goes, or that ' +
      'none matches (the inbound server then refuses it at RCPT TO with 550 5.1.1).',
  })
  @ApiParam({ name: 'domain', example: 'example.com' })
  @ApiOkResponse({ type: ForwardingResolutionDto })
  @ApiBadRequestResponse({ type: ErrorBodyDto, description: 'No address, or one on another domain' })
  @ApiNotFoundResponse({ type: ErrorBodyDto, description: 'The account has no such domain' })
  resolve(
    @CurrentAuth() auth: AuthContext,
    @Param('domain') domain: string,
    @Query() query: ResolveForwardingQueryDto,
  ): Promise<ForwardingResolutionDto> {
    return this.forwarding.resolve(auth.accountId, domain, query.address);
  }
}
