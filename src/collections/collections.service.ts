import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { AppException } from '../common/errors/app.exception';
import { ErrorCode } from '../common/errors/error-code';
import { newId } from '../common/ids';
import { checkFormMap, FormSettings, SettingsChecker } from '../domains/domain-settings';
import { ProjectsService } from '../projects/projects.service';
import { uniqueViolation } from '../common/errors/unique-violation';
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
  ) {}

  list(accountId: string): Promise<Collection[]> {
    return this.collections.find({ where: { accountId }, order: { createdAt: 'ASC' } });
  }

  async get(accountId: string, slug: string): Promise<Collection> {
    const collection = await this.collections.findOneBy({ accountId, slug });
    if (!collection) throw AppException.notFound('Collection', slug);
    return collection;
  }

  /** One form of a collection; 404 when either slug is unknown in the account. */
  async getForm(accountId: string, slug: string, formSlug: string): Promise<{ collection: Collection; form: FormSettings }> {
    const collection = await this.get(accountId, slug);
    const form = Object.hasOwn(collection.forms, formSlug) ? collection.forms[formSlug] : undefined;
    if (!form) throw AppException.notFound('Form', `${slug}/${formSlug}`);
    return { collection, form };
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
      forms,
    });
    try {
      // save, not insert: TypeORM's insert typing cannot express the jsonb forms shape
      await this.collections.save(collection);
    } catch (err) {
      if (uniqueViolation(err) === 'UQ_collections_account_slug') {
        throw new AppException(ErrorCode.Conflict, `A collection with the slug ${input.slug} exists already`);
      }
      throw err;
    }
    return this.collections.findOneByOrFail({ id: collection.id, accountId });
  }
}
