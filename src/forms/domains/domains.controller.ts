import { Body, Controller, Delete, Get, HttpCode, HttpStatus, Param, Post, Put } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiConflictResponse,
  ApiCreatedResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiParam,
  ApiTags,
} from '@nestjs/swagger';
import type { AuthContext } from '../../auth/auth-context';
import { Auth } from '../../auth/auth.decorator';
import { CurrentAuth } from '../../auth/current-auth.decorator';
import { ErrorBodyDto } from '../../common/errors/error-body';
import { SuccessResponseDto } from '../../common/http/success-response.dto';
import type { Domain } from '../../domains/domain.entity';
import { DomainsService } from '../../domains/domains.service';
import { DomainFormsService } from './domain-forms.service';
import { CreateDomainDto, DomainDto, DomainListDto, UpdateDomainDto, VerifyDomainDto } from './dto/domain.dto';

const DOMAIN_PARAM = { name: 'domain', example: 'example.com' };

@ApiTags('Domains')
@Controller('domains')
export class DomainsController {
  constructor(
    private readonly domains: DomainsService,
    private readonly domainForms: DomainFormsService,
  ) {}

  @Get()
  @Auth({ keyTypes: ['admin'], permission: 'domains.read' })
  @ApiOperation({ summary: 'List the account’s domains' })
  @ApiOkResponse({ type: DomainListDto })
  async list(@CurrentAuth() auth: AuthContext): Promise<DomainListDto> {
    const domains = await this.domains.list(auth.accountId);
    return { domains: await Promise.all(domains.map((d) => this.present(d))), count: domains.length };
  }

  @Post()
  @Auth({ keyTypes: ['admin'], permission: 'domains.write' })
  @ApiOperation({
    summary: 'Add a domain',
    description:
      'Makes a verification token and an RSA-2048 DKIM key (the private key never leaves the server). Publish the ' +
      'returned dnsRecords, then call POST /domains/verify. 409 if the account has the domain already or another ' +
      'account has verified it.',
  })
  @ApiCreatedResponse({ type: DomainDto })
  @ApiBadRequestResponse({ type: ErrorBodyDto, description: 'Not a valid domain name' })
  @ApiConflictResponse({ type: ErrorBodyDto })
  async create(@CurrentAuth() auth: AuthContext, @Body() dto: CreateDomainDto): Promise<DomainDto> {
    return this.present(await this.domains.create(auth.accountId, dto.domain));
  }

  @Post('verify')
  @HttpCode(HttpStatus.OK)
  @Auth({ keyTypes: ['admin'], permission: 'domains.write' })
  @ApiOperation({
    summary: 'Check the verification record now',
    description:
      'Looks the TXT record up. Found: the domain becomes verified (a failed one too). Not found: it stays pending ' +
      '(failed 72 h after creation) and lastCheckError says why. Can be asked again at any time.',
  })
  @ApiOkResponse({ type: DomainDto })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  @ApiConflictResponse({ type: ErrorBodyDto, description: 'Another account verified the domain first' })
  async verify(@CurrentAuth() auth: AuthContext, @Body() dto: VerifyDomainDto): Promise<DomainDto> {
    return this.present(await this.domains.verify(auth.accountId, dto.domain));
  }

  @Get(':domain')
  @Auth({ keyTypes: ['admin'], permission: 'domains.read' })
  @ApiOperation({ summary: 'Read a domain: state, DNS records to publish, settings' })
  @ApiParam(DOMAIN_PARAM)
  @ApiOkResponse({ type: DomainDto })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  async get(@CurrentAuth() auth: AuthContext, @Param('domain') name: string): Promise<DomainDto> {
    return this.present(await this.domains.get(auth.accountId, name));
  }

  @Put(':domain')
  @Auth({ keyTypes: ['admin'], permission: 'domains.write' })
  @ApiOperation({
    summary: 'Change a domain’s settings',
    description:
      'contactRecipients, forwarding rules, inboundFiltering (spam threshold, attachment types) and forms. A section given replaces the stored one, null removes it, an ' +
      'absent one is kept. Each invalid value is named in details.fields (400).',
  })
  @ApiParam(DOMAIN_PARAM)
  @ApiOkResponse({ type: DomainDto })
  @ApiBadRequestResponse({ type: ErrorBodyDto })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  async update(@CurrentAuth() auth: AuthContext, @Param('domain') name: string, @Body() dto: UpdateDomainDto): Promise<DomainDto> {
    return this.present(await this.domainForms.updateSettings(auth.accountId, name, dto));
  }

  @Delete(':domain')
  @Auth({ keyTypes: ['admin'], permission: 'domains.write' })
  @ApiOperation({ summary: 'Remove a domain', description: 'Its DKIM key and settings are deleted with it.' })
  @ApiParam(DOMAIN_PARAM)
  @ApiOkResponse({ type: SuccessResponseDto })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  async remove(@CurrentAuth() auth: AuthContext, @Param('domain') name: string): Promise<SuccessResponseDto> {
    const domain = await this.domains.remove(auth.accountId, name);
    return { success: true, message: `Domain ${domain.name} deleted` };
  }

  private async present(domain: Domain): Promise<DomainDto> {
    const forms = await this.domainForms.formsOf(domain);
    return DomainDto.from(domain, {
      forms,
      verificationRecord: this.domains.verificationRecord(domain),
      dnsRecords: this.domains.dnsRecords(domain),
      verificationDeadline: this.domains.verificationDeadline(domain),
    });
  }
}
