import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, In, Repository } from 'typeorm';
import { AppException } from '../common/errors/app.exception';
import { ErrorCode } from '../common/errors/error-code';
import { newId } from '../common/ids';
import { Project } from './project.entity';
import { slugify } from './slug';
import { uniqueViolation } from '../common/errors/unique-violation';

/** Projects of an account (D-1). The only writer of projects. */
@Injectable()
export class ProjectsService {
  constructor(@InjectRepository(Project) private readonly projects: Repository<Project>) {}

  list(accountId: string): Promise<Project[]> {
    return this.projects.find({ where: { accountId }, order: { createdAt: 'ASC' } });
  }

  /** A project of the account by id; 404 for unknown and foreign ids alike. */
  async get(accountId: string, projectId: string): Promise<Project> {
    const project = await this.projects.findOneBy({ accountId, id: projectId });
    if (!project) throw AppException.notFound('Project', projectId);
    return project;
  }

  /**
   * Writes the declarative configuration's projects in the caller's transaction: `upserts` created or renamed,
   * `remove` deleted (their collections stay, without a project). Answers the id of every project by slug.
   */
  async applyConfig(
    manager: EntityManager,
    accountId: string,
    upserts: { slug: string; name: string }[],
    remove: string[],
  ): Promise<Map<string, string>> {
    const repository = manager.getRepository(Project);
    if (remove.length) await repository.delete({ accountId, slug: In(remove) });
    const ids = new Map((await repository.find({ where: { accountId }, select: { id: true, slug: true } })).map((p) => [p.slug, p.id]));
    for (const { slug, name } of upserts) {
      const id = ids.get(slug);
      if (id) await repository.update({ id, accountId }, { name });
      else {
        const project = repository.create({ id: newId('prj'), accountId, name, slug });
        await repository.insert(project);
        ids.set(slug, project.id);
      }
    }
    return ids;
  }

  async create(accountId: string, input: { name: string; slug?: string }): Promise<Project> {
    const name = input.name.trim();
    const slug = input.slug ?? slugify(name);
    if (!slug) throw AppException.invalidField('slug', 'the name has no letters or digits to make a slug from: give a slug');
    const project = this.projects.create({ id: newId('prj'), accountId, name, slug });
    try {
      await this.projects.insert(project);
    } catch (err) {
      if (uniqueViolation(err) === 'UQ_projects_account_slug') {
        throw new AppException(ErrorCode.Conflict, `A project with the slug ${slug} exists already`);
      }
      throw err;
    }
    return this.projects.findOneByOrFail({ id: project.id, accountId });
  }
}
