import { Body, Controller, Get, Post } from '@nestjs/common';
import { ApiConflictResponse, ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { AuthContext } from '../auth/auth-context';
import { Auth } from '../auth/auth.decorator';
import { CurrentAuth } from '../auth/current-auth.decorator';
import { ErrorBodyDto } from '../common/errors/error-body';
import { CreateProjectDto, ProjectDto, ProjectListDto } from './dto/project.dto';
import { ProjectsService } from './projects.service';

@ApiTags('Projects')
@Controller('projects')
export class ProjectsController {
  constructor(private readonly projects: ProjectsService) {}

  @Get()
  @Auth({ keyTypes: ['admin'], permission: 'projects.read' })
  @ApiOperation({ summary: 'List the account’s projects' })
  @ApiOkResponse({ type: ProjectListDto })
  async list(@CurrentAuth() auth: AuthContext): Promise<ProjectListDto> {
    const projects = await this.projects.list(auth.accountId);
    return { projects: projects.map(ProjectDto.from), count: projects.length };
  }

  @Post()
  @Auth({ keyTypes: ['admin'], permission: 'projects.write' })
  @ApiOperation({ summary: 'Create a project', description: '409 if the account has a project with that slug.' })
  @ApiCreatedResponse({ type: ProjectDto })
  @ApiConflictResponse({ type: ErrorBodyDto })
  async create(@CurrentAuth() auth: AuthContext, @Body() dto: CreateProjectDto): Promise<ProjectDto> {
    return ProjectDto.from(await this.projects.create(auth.accountId, dto));
  }
}
