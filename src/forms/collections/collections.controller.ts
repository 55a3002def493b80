import { Body, Controller, Get, Param, Post } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiConflictResponse,
  ApiCreatedResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';
import type { AuthContext } from '../../auth/auth-context';
import { Auth } from '../../auth/auth.decorator';
import { CurrentAuth } from '../../auth/current-auth.decorator';
import { ErrorBodyDto } from '../../common/errors/error-body';
import { AppConfigService } from '../../config/app-config.service';
import { publicFormSettings } from '../spam/captcha-secret';
import { CollectionsService } from './collections.service';
import { CollectionDto, CollectionFormDto, CollectionListDto, CreateCollectionDto } from './dto/collection.dto';

@ApiTags('Collections')
@Controller('collections')
export class CollectionsController {
  constructor(
    private readonly collections: CollectionsService,
    private readonly config: AppConfigService,
  ) {}

  @Get()
  @Auth({ keyTypes: ['admin'], permission: 'collections.read' })
  @ApiOperation({ summary: 'List the account’s collections' })
  @ApiOkResponse({ type: CollectionListDto })
  async list(@CurrentAuth() auth: AuthContext): Promise<CollectionListDto> {
    const collections = await this.collections.list(auth.accountId);
    const forms = await this.collections.formsOf(collections);
    return { collections: collections.map((c) => CollectionDto.from(c, forms.get(c.id) ?? {})), count: collections.length };
  }

  @Post()
  @Auth({ keyTypes: ['admin'], permission: 'collections.write' })
  @ApiOperation({
    summary: 'Create a collection of forms',
    description: 'Browsers post to /c/{collection}/{form}. 409 if the account has a collection with that slug.',
  })
  @ApiCreatedResponse({ type: CollectionDto })
  @ApiBadRequestResponse({ type: ErrorBodyDto })
  @ApiNotFoundResponse({ type: ErrorBodyDto, description: 'projectId is not a project of the account' })
  @ApiConflictResponse({ type: ErrorBodyDto })
  async create(@CurrentAuth() auth: AuthContext, @Body() dto: CreateCollectionDto): Promise<CollectionDto> {
    const collection = await this.collections.create(auth.accountId, dto);
    const forms = await this.collections.formsOf([collection]);
    return CollectionDto.from(collection, forms.get(collection.id) ?? {});
  }

  @Get(':slug/forms/:formSlug')
  @Auth({ keyTypes: ['admin'], permission: 'collections.read' })
  @ApiOperation({ summary: 'Read one form of a collection', description: 'Admin keys only, like the rest of /collections.' })
  @ApiOkResponse({ type: CollectionFormDto })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  async getForm(
    @CurrentAuth() auth: AuthContext,
    @Param('slug') slug: string,
    @Param('formSlug') formSlug: string,
  ): Promise<CollectionFormDto> {
    const { collection, form } = await this.collections.getForm(auth.accountId, slug, formSlug);
    return {
      collection: collection.slug,
      slug: formSlug,
      submitUrl: `${this.config.publicUrl}/c/${collection.slug}/${formSlug}`,
      settings: publicFormSettings(form.settings),
    };
  }
}
