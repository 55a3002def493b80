import { Injectable } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import { DataSource, EntityManager, In, Repository } from 'typeorm';
import { AppException } from '../../common/errors/app.exception';
import { ErrorCode } from '../../common/errors/error-code';
import { newId } from '../../common/ids';
import { SettingsChecker } from '../../common/settings-checker';
import type { Form } from '../form.entity';
import { checkFormMap, FormSettings } from '../form-settings';
import { FormsService } from '../forms.service';
import { ProjectsService } from '../../projects/projects.service';
import { uniqueViolation } from '../../common/errors/unique-violation';
import { Collection } from './collection.entity';

export interface NewCollection {
  slug: string;
  name?: string;
  projectId?: string;
  forms?: unknown;
}

/** Collections of an account and their forms (D-1). The only writer of collections. */
@Injectable()
export class CollectionsService {
  constructor(
    @InjectRepository(Collection) private readonly collections: Repository<Collection>,
    private readonly projects: ProjectsService,
    private readonly forms: FormsService,
    @InjectDataSource() private readonly dataSource: DataSource,
  ) {}

  list(accountId: string): Promise<Collection[]> {
    return this.collections.find({ where: { accountId }, order: { createdAt: 'ASC' } });
  }

  async get(accountId: string, slug: string): Promise<Collection> {
    const collection = await this.collections.findOneBy({ accountId, slug });
    if (!collection) throw AppException.notFound('Collection', slug);
    return collection;
  }

  /** slug → settings of each collection's forms. */
  formsOf(collections: Collection[]): Promise<Map<string, Record<string, FormSettings>>> {
    return this.forms.mapsOfCollections(collections.map((c) => c.id));
  }

  /** One form of a collection; 404 when either slug is unknown in the account. */
  async getForm(accountId: string, slug: string, formSlug: string): Promise<{ collection: Collection; form: Form }> {
    const collection = await this.get(accountId, slug);
    const form = await this.forms.findOfCollection(collection.id, formSlug);
    if (!form) throw AppException.notFound('Form', `${slug}/${formSlug}`);
    return { collection, form };
  }

  /**
   * Writes the declarative configuration's collections in the caller's transaction (checked already): each of
   * `upserts` is created or updated, its forms made exactly these; `remove` are deleted with their forms.
   */
  async applyConfig(
    manager: EntityManager,
    accountId: string,
    upserts: { slug: string; name: string; projectId: string | null; forms: Record<string, FormSettings> }[],
    remove: string[],
  ): Promise<void> {
    const repository = manager.getRepository(Collection);
    if (remove.length) await repository.delete({ accountId, slug: In(remove) });
    for (const { slug, name, projectId, forms } of upserts) {
      let collection = await repository.findOneBy({ accountId, slug });
      if (collection) await repository.update({ id: collection.id, accountId }, { name, projectId });
      else {
        collection = repository.create({ id: newId('col'), accountId, slug, name, projectId });
        await repository.insert(collection);
      }
      await this.forms.replaceMap(manager, accountId, { collectionId: collection.id }, forms);
    }
  }

  async create(accountId: string, input: NewCollection): Promise<Collection> {
    const check = new SettingsChecker();
    const forms = input.forms === undefined ? {} : checkFormMap(input.forms, 'forms', check, { requireRecipients: true });
    if (!forms) throw AppException.validation(check.errors);
    if (input.projectId) await this.projects.get(accountId, input.projectId);

    const collection = this.collections.create({
      id: newId('col'),
      accountId,
      slug: input.slug,
      name: input.name?.trim() || input.slug,
      projectId: input.projectId ?? null,
    });
    try {
      await this.dataSource.transaction(async (manager) => {
        await manager.getRepository(Collection).insert(collection);
        await this.forms.replaceMap(manager, accountId, { collectionId: collection.id }, forms);
      });
    } catch (err) {
      if (uniqueViolation(err) === 'UQ_collections_account_slug') {
        throw new AppException(ErrorCode.Conflict, `A collection with the slug ${input.slug} exists already`);
      }
      throw err;
    }
    return this.collections.findOneByOrFail({ id: collection.id, accountId });
  }
}
