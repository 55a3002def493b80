import { Body, Controller, Get, Put, Query } from '@nestjs/common';
import { ApiBadRequestResponse, ApiBody, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { AuthContext } from '../auth/auth-context';
import { Auth } from '../auth/auth.decorator';
import { CurrentAuth } from '../auth/current-auth.decorator';
import { ErrorBodyDto } from '../common/errors/error-body';
import { AccountConfigService } from './account-config.service';
import { ConfigFileDto, PushConfigQueryDto, PushResultDto } from './dto/config.dto';

const FILE =
  'The declarative file as JSON (the command line client converts YAML): project, projects, domains (contactRecipients, ' +
  'forwarding, inboundFiltering, forms), collections (name, project, forms), templates, settings. A collection is in the ' +
  'project it names (null: in none); one that does not say is in the file’s project, or without one stays where it is.';

@ApiTags('Configuration')
@Controller('config')
export class AccountConfigController {
  constructor(private readonly config: AccountConfigService) {}

  @Get()
  @Auth({ keyTypes: ['admin'], permission: ['projects.read', 'domains.read', 'collections.read', 'templates.read'] })
  @ApiOperation({
    summary: 'Export the account’s configuration as a declarative file',
    description:
      `${FILE} Forms’ CAPTCHA secrets are written as environment-variable references, captcha_secret: ` +
      '${TURNSTILE_SECRET} (${HCAPTCHA_SECRET}; one per form, ${TURNSTILE_SECRET_<DOMAIN>_<FORM>}, where forms of one ' +
      'provider have different secrets): the file holds no secret. `mailroom push` fills them in from its environment; ' +
      'pushed back so, the file changes nothing.',
  })
  @ApiOkResponse({ type: ConfigFileDto })
  export(@CurrentAuth() auth: AuthContext): Promise<Record<string, unknown>> {
    return this.config.export(auth.accountId);
  }

  @Put()
  @Auth({ keyTypes: ['admin'], permission: ['projects.write', 'domains.write', 'collections.write', 'templates.write', 'settings.write'] })
  @ApiOperation({
    summary: 'Push a declarative configuration file',
    description:
      `${FILE} What the file names is created or made as it says, in one transaction; what it does not name is kept, ` +
      'or deleted with prune=true. dryRun=true answers the plan without changing anything. Pushing the same file ' +
      'again changes nothing. Projects the file names are created or renamed; prune deletes the others unless a ' +
      'collection is still in them (a note says so). Pushes of one account run one after the other. An invalid file is a 400 naming every ' +
      'problem by its path in the file (domains.example.com.forms.contact.to); nothing is applied. A captcha_secret ' +
      'is the secret itself (a ${NAME} reference is refused: the command line client fills those in); the plan ' +
      'compares it with the stored one and shows "(secret)" or "(new secret)", never a value.',
  })
  @ApiBody({ type: ConfigFileDto })
  @ApiOkResponse({ type: PushResultDto })
  @ApiBadRequestResponse({ type: ErrorBodyDto, description: 'Every problem of the file, by path, in details.fields' })
  push(@CurrentAuth() auth: AuthContext, @Query() query: PushConfigQueryDto, @Body() file: unknown): Promise<PushResultDto> {
    return this.config.push(auth.accountId, file, { dryRun: query.dryRun ?? false, prune: query.prune ?? false });
  }
}
