import { ApiExtraModels, ApiProperty, ApiPropertyOptional, getSchemaPath } from '@nestjs/swagger';
import { IsOptional, IsString, Length, Matches } from 'class-validator';
import { ONE_LINE_NAME, ONE_LINE_NAME_MESSAGE, SLUG_PATTERN, slugRule } from '../../../common/settings-checker';
import { FormSettingsDto } from '../../dto/form-settings.dto';
import type { FormSettings } from '../../form-settings';
import type { Collection } from '../collection.entity';

const FORMS_SCHEMA = {
  type: 'object',
  additionalProperties: { $ref: getSchemaPath(FormSettingsDto) },
  description: 'form slug → form settings; each form needs recipients (or to)',
  example: { 'contact-us': { recipients: ['team@example.com'], subject: 'New contact', replies: true } },
} as const;

@ApiExtraModels(FormSettingsDto)
export class CreateCollectionDto {
  @ApiProperty({ example: 'website', description: `Unique in the account. ${slugRule()}` })
  @Matches(SLUG_PATTERN, { message: `slug must be ${slugRule()}` })
  slug: string;

  @ApiPropertyOptional({ example: 'Website forms', maxLength: 200, description: 'One line, not blank. Default: the slug' })
  @IsOptional()
  @IsString()
  @Length(1, 200)
  @Matches(ONE_LINE_NAME, { message: ONE_LINE_NAME_MESSAGE })
  name?: string;

  @ApiPropertyOptional({ example: 'prj_3xVb9QmT0kLw2sZr8NcY1p', description: 'A project of the account' })
  @IsOptional()
  @IsString()
  @Length(1, 40)
  projectId?: string;

  @ApiPropertyOptional(FORMS_SCHEMA)
  @IsOptional()
  forms?: unknown;
}

@ApiExtraModels(FormSettingsDto)
export class CollectionDto {
  @ApiProperty({ example: 'col_8WqT1xYb4nLk0sVz2MrE6p' })
  id: string;

  @ApiProperty({ example: 'website' })
  slug: string;

  @ApiProperty({ example: 'Website forms' })
  name: string;

  @ApiProperty({ type: String, nullable: true, example: 'prj_3xVb9QmT0kLw2sZr8NcY1p' })
  projectId: string | null;

  @ApiProperty(FORMS_SCHEMA)
  forms: Record<string, FormSettings>;

  @ApiProperty({ format: 'date-time' })
  createdAt: string;

  @ApiProperty({ format: 'date-time' })
  updatedAt: string;

  static from(collection: Collection, forms: Record<string, FormSettings>): CollectionDto {
    return {
      id: collection.id,
      slug: collection.slug,
      name: collection.name,
      projectId: collection.projectId,
      forms,
      createdAt: collection.createdAt.toISOString(),
      updatedAt: collection.updatedAt.toISOString(),
    };
  }
}

export class CollectionListDto {
  @ApiProperty({ type: [CollectionDto] })
  collections: CollectionDto[];

  @ApiProperty({ example: 1 })
  count: number;
}

export class CollectionFormDto {
  @ApiProperty({ example: 'website', description: 'Slug of the collection' })
  collection: string;

  @ApiProperty({ example: 'contact-us', description: 'Slug of the form' })
  slug: string;

  @ApiProperty({ example: 'http://localhost:3000/c/website/contact-us', description: 'Where browsers post submissions' })
  submitUrl: string;

  @ApiProperty({ type: FormSettingsDto })
  settings: FormSettings;
}
