import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, Length, Matches } from 'class-validator';
import { ONE_LINE_NAME, ONE_LINE_NAME_MESSAGE, SLUG_PATTERN, slugRule } from '../../common/settings-checker';
import type { Project } from '../project.entity';

export class CreateProjectDto {
  @ApiProperty({ example: 'Marketing site', maxLength: 200, description: 'One line, not blank (as the configuration file takes it)' })
  @IsString()
  @Length(1, 200)
  @Matches(ONE_LINE_NAME, { message: ONE_LINE_NAME_MESSAGE })
  name: string;

  @ApiPropertyOptional({ example: 'marketing-site', description: `Unique in the account; made from the name when absent. ${slugRule()}` })
  @IsOptional()
  @Matches(SLUG_PATTERN, { message: `slug must be ${slugRule()}` })
  slug?: string;
}

export class ProjectDto {
  @ApiProperty({ example: 'prj_3xVb9QmT0kLw2sZr8NcY1p' })
  id: string;

  @ApiProperty({ example: 'Marketing site' })
  name: string;

  @ApiProperty({ example: 'marketing-site' })
  slug: string;

  @ApiProperty({ format: 'date-time' })
  createdAt: string;

  @ApiProperty({ format: 'date-time' })
  updatedAt: string;

  static readonly from = (project: Project): ProjectDto => {
    return {
      id: project.id,
      name: project.name,
      slug: project.slug,
      createdAt: project.createdAt.toISOString(),
      updatedAt: project.updatedAt.toISOString(),
    };
  };
}

export class ProjectListDto {
  @ApiProperty({ type: [ProjectDto] })
  projects: ProjectDto[];

  @ApiProperty({ example: 1 })
  count: number;
}
