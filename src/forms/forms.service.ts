import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import { DataSource, EntityManager, In, IsNull, Not, Repository } from 'typeorm';
import { SecretBox } from '../common/crypto/secret-box';
import { AppException } from '../common/errors/app.exception';
import { decodePageCursor, encodePageCursor, newestFirstPage } from '../common/http/page-cursor';
import { newId } from '../common/ids';
import { SettingsChecker } from '../common/settings-checker';
import { AppConfigService } from '../config/app-config.service';
import { CONTACT_FORM_SLUG, Form, FormKind } from './form.entity';
import { FormSubmission } from './form-submission.entity';
import { checkFormSettings, FormCheckOptions, FormSettings } from './form-settings';
import { SubmissionFilter, submissionFilterConditions } from './submissions-export.service';
import { keptCaptchaProvider, publicFormSettings, sealCaptchaSecret, withoutCaptchaSecret } from './spam/captcha-secret';

/** Whose map of forms: a domain's (`/{domain}/{slug}`) or a collection's (`/c/{collection}/{slug}`). */
export type FormOwner = { domainId: string } | { collectionId: string };

/** A new stand-alone or instant form: name, recipients and subject, plus any other settings. */
export interface NewForm {
  name: string;
  settings: Record<string, unknown>;
}

export interface SubmissionQuery extends SubmissionFilter {
  limit: number;
  cursor?: string;
}

export interface SubmissionPage {
  submissions: FormSubmission[];
  total: number;
  /** Pass as `cursor` for the next page; null on the last page. */
  nextCursor: string | null;
}

/**
 * Forms of an account, whatever they belong to (D-1: another account's form is a 404). The only writer of forms:
 * every write seals the CAPTCHA secret (spam/captcha-secret.ts), so a Form's settings hold it sealed; what is made
 * for responses (mapOf, FormDto) shows only that one is set.
 */
@Injectable()
export class FormsService implements OnApplicationBootstrap {
  private readonly logger = new Logger(FormsService.name);

  constructor(
    @InjectRepository(Form) private readonly forms: Repository<Form>,
    @InjectRepository(FormSubmission) private readonly submissions: Repository<FormSubmission>,
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly secrets: SecretBox,
    private readonly config: AppConfigService,
  ) {}

  /** Seals the CAPTCHA secrets that rows written before sealing hold in plain text (once: later starts find none). */
  async onApplicationBootstrap(): Promise<void> {
    if (!this.config.runsApi) return;
    try {
      const sealed = await this.sealPlainCaptchaSecrets();
      if (sealed > 0) this.logger.log(`Sealed ${sealed} CAPTCHA secret(s) stored in plain text`);
    } catch (err) {
      this.logger.warn(`Could not seal the CAPTCHA secrets stored in plain text (they still work): ${(err as Error).message}`);
    }
  }

  /**
   * Seals every plain-text CAPTCHA secret; answers how many. Each row is written only if it still holds the value
   * read, so instances starting together, or a change of the form meanwhile, lose nothing.
   */
  async sealPlainCaptchaSecrets(): Promise<number> {
    const rows: { id: string; secret: string }[] = await this.dataSource.query(
      `SELECT id, settings #>> '{spam_protection,captcha_secret}' AS secret FROM forms
       WHERE jsonb_typeof(settings #> '{spam_protection,captcha_secret}') = 'string'`,
    );
    let sealed = 0;
    for (const { id, secret } of rows.filter((row) => !SecretBox.isSealed(row.secret))) {
      const [, affected] = await this.dataSource.query<[unknown, number]>(
        `UPDATE forms SET settings = jsonb_set(settings, '{spam_protection,captcha_secret}', to_jsonb($2::text))
         WHERE id = $1 AND settings #>> '{spam_protection,captcha_secret}' = $3`,
        [id, this.secrets.seal(secret), secret],
      );
      sealed += affected;
    }
    return sealed;
  }

  list(accountId: string): Promise<Form[]> {
    return this.forms.find({
      where: { accountId },
      relations: { domain: true, collection: true },
      order: { createdAt: 'ASC', id: 'ASC' },
    });
  }

  /** One form of the account; 404 for unknown and foreign ids alike. */
  async get(accountId: string, id: string, kinds?: readonly FormKind[]): Promise<Form> {
    const form = await this.forms.findOne({
      where: { id, accountId, ...(kinds ? { kind: In([...kinds]) } : {}) },
      relations: { domain: true, collection: true },
    });
    if (!form) throw AppException.notFound('Form', id);
    return form;
  }

  /** Submissions per form (spam included), for the `submissions` field of the form objects. */
  async submissionCounts(formIds: string[]): Promise<Map<string, number>> {
    if (formIds.length === 0) return new Map();
    const rows: { form_id: string; count: string }[] = await this.dataSource.query(
      'SELECT form_id, count(*) AS count FROM form_submissions WHERE form_id = ANY($1::varchar[]) GROUP BY form_id',
      [formIds],
    );
    return new Map(rows.map((row) => [row.form_id, Number(row.count)]));
  }

  /**
   * A form's submissions, newest first, keyset-paged: the cursor names the last one of the previous page and carries
   * the total counted for the first (page-cursor.ts), so only the first page counts the form's submissions.
   */
  async listSubmissions(accountId: string, formId: string, query: SubmissionQuery): Promise<SubmissionPage> {
    const listing = `form-submissions:${formId}:${query.status ?? ''}:${query.notification ?? ''}:${query.spam ?? ''}`;
    const after = query.cursor ? decodePageCursor(listing, query.cursor) : null;
    const base = this.submissions.createQueryBuilder('s').where('s.accountId = :accountId AND s.formId = :formId', { accountId, formId });
    if (query.status) base.andWhere('s.status = :status', { status: query.status });
    for (const condition of submissionFilterConditions('s', query)) base.andWhere(condition);
    const total = after?.total ?? (await base.clone().getCount());
    const page = base.clone().select(SUBMISSION_COLUMNS.map((column) => `s.${column}`));
    const { rows: submissions, next } = await newestFirstPage(page, after, query.limit);
    return { submissions, total, nextCursor: next && encodePageCursor(listing, next, total) };
  }

  /** One submission of the account's form, as listings show it; 404 for unknown ids and other forms' alike. */
  async submission(accountId: string, formId: string, id: string): Promise<FormSubmission> {
    const found = await this.submissions
      .createQueryBuilder('s')
      .select(SUBMISSION_COLUMNS.map((column) => `s.${column}`))
      .where('s.id = :id AND s.accountId = :accountId AND s.formId = :formId', { id, accountId, formId })
      .getOne();
    if (!found) throw AppException.notFound('Submission', id);
    return found;
  }

  /** Creates a stand-alone form (`POST /api/forms`) or, with `confirmationTokenHash`, an unconfirmed instant form. */
  async create(accountId: string, input: NewForm, instant?: { confirmationTokenHash: string }): Promise<Form> {
    const settings = sealCaptchaSecret(this.secrets, validSettings({ ...input.settings, name: input.name }));
    const form = this.forms.create({
      id: newId('frm'),
      accountId,
      kind: instant ? 'instant' : 'standalone',
      name: input.name,
      slug: null,
      domainId: null,
      collectionId: null,
      settings,
      confirmedAt: instant ? null : new Date(),
      confirmationTokenHash: instant?.confirmationTokenHash ?? null,
    });
    await this.forms.save(form);
    return this.get(accountId, form.id);
  }

  /**
   * Changes a form's settings: a setting given replaces the stored one, null removes it (PATCH semantics).
   * The result is validated as a whole, so a form never holds settings it could not be created with. The CAPTCHA
   * secret, never shown, is kept when left out of a spam_protection given (for the same provider).
   */
  async update(accountId: string, id: string, change: Record<string, unknown>): Promise<Form> {
    const form = await this.get(accountId, id);
    const merged: Record<string, unknown> = { ...withoutCaptchaSecret(form.settings) };
    for (const [key, value] of Object.entries(change)) {
      if (value === null) delete merged[key];
      else if (value !== undefined) merged[key] = value;
    }
    if (change.to !== undefined && change.to !== null) delete merged.recipients;
    const options = { requireRecipients: form.kind !== 'domain', keptCaptchaSecret: keptCaptchaProvider(form.settings) };
    const settings = sealCaptchaSecret(this.secrets, validSettings(merged, options), form.settings);
    form.settings = settings;
    form.name = settings.name ?? form.name;
    await this.forms.save(form);
    return this.get(accountId, id);
  }

  async remove(accountId: string, id: string): Promise<Form> {
    const form = await this.get(accountId, id);
    await this.forms.delete({ id, accountId });
    return form;
  }

  /** The forms of a domain or a collection as responses show them: slug → settings (no CAPTCHA secret). */
  async mapOf(owner: FormOwner): Promise<Record<string, FormSettings>> {
    const forms = await this.forms.find({ where: { ...owner, slug: Not(IsNull()) }, order: { slug: 'ASC' } });
    return Object.fromEntries(forms.map((form) => [form.slug!, publicFormSettings(form.settings)]));
  }

  /** The forms of many collections at once, as responses show them: collection id → slug → settings. */
  async mapsOfCollections(collectionIds: string[]): Promise<Map<string, Record<string, FormSettings>>> {
    const maps = new Map<string, Record<string, FormSettings>>(collectionIds.map((id) => [id, {}]));
    if (collectionIds.length === 0) return maps;
    const forms = await this.forms.find({ where: { collectionId: In(collectionIds) }, order: { slug: 'ASC' } });
    for (const form of forms) maps.get(form.collectionId!)![form.slug!] = publicFormSettings(form.settings);
    return maps;
  }

  /**
   * Makes a domain's or collection's forms exactly `forms` (validated already, given whole: CAPTCHA secrets in
   * clear, sealed here): new slugs are created, known ones keep their id (and submissions) with the new settings,
   * the others are deleted. `keep` slugs are never deleted (a domain's contact form).
   */
  async replaceMap(
    manager: EntityManager,
    accountId: string,
    owner: FormOwner,
    forms: Record<string, FormSettings>,
    keep: readonly string[] = [],
  ): Promise<void> {
    const repository = manager.getRepository(Form);
    const existing = await repository.find({ where: { ...owner, accountId } });
    const bySlug = new Map(existing.map((form) => [form.slug, form]));
    const kind: FormKind = 'domainId' in owner ? 'domain' : 'collection';
    const stale = existing.filter((form) => form.slug !== null && !Object.hasOwn(forms, form.slug) && !keep.includes(form.slug));
    if (stale.length) await repository.delete({ id: In(stale.map((form) => form.id)), accountId });
    const rows = Object.entries(forms).map(([slug, settings]) =>
      repository.create({
        id: bySlug.get(slug)?.id ?? newId('frm'),
        accountId,
        kind,
        name: settings.name ?? slug,
        slug,
        domainId: 'domainId' in owner ? owner.domainId : null,
        collectionId: 'collectionId' in owner ? owner.collectionId : null,
        settings: sealCaptchaSecret(this.secrets, settings),
        confirmedAt: bySlug.get(slug)?.confirmedAt ?? new Date(),
        confirmationTokenHash: null,
      }),
    );
    if (rows.length) await repository.save(rows);
  }

  /** The form a domain's slug names. */
  async findOfDomain(domainId: string, slug: string): Promise<Form | null> {
    return this.forms
      .createQueryBuilder('form')
      .innerJoinAndSelect('form.domain', 'domain')
      .where('form.domainId = :domainId AND form.slug = :slug', { domainId, slug })
      .getOne();
  }

  /** The domain's contact form (`/{domain}/send`), made on first use with these defaults. */
  async contactForm(accountId: string, domainId: string): Promise<Form> {
    const existing = await this.findOfDomain(domainId, CONTACT_FORM_SLUG);
    if (existing) return existing;
    const settings: FormSettings = { name: 'Contact', requiredFields: ['email', 'message'] };
    await this.dataSource.query(
      `INSERT INTO forms (id, account_id, kind, name, slug, domain_id, settings, confirmed_at)
       VALUES ($1, $2, 'domain', 'Contact', $3, $4, $5, now())
       ON CONFLICT (domain_id, slug) WHERE domain_id IS NOT NULL DO NOTHING`,
      [newId('frm'), accountId, CONTACT_FORM_SLUG, domainId, JSON.stringify(settings)],
    );
    return (await this.findOfDomain(domainId, CONTACT_FORM_SLUG))!;
  }

  findOfCollection(collectionId: string, slug: string): Promise<Form | null> {
    return this.forms.findOne({ where: { collectionId, slug }, relations: { collection: true } });
  }

  /** The forms posted to at `/c/{collection}/{slug}`: one per account that has such a collection and form. */
  findOfCollectionSlug(collection: string, slug: string, accountId?: string): Promise<Form[]> {
    return this.forms.find({
      where: { slug, collection: { slug: collection }, ...(accountId ? { accountId } : {}) },
      relations: { collection: true },
      order: { createdAt: 'ASC' },
      take: 20,
    });
  }

  /** The account's forms with that slug, under any domain or collection. */
  findBySlug(accountId: string, slug: string): Promise<Form[]> {
    return this.forms.find({ where: { accountId, slug }, relations: { domain: true, collection: true }, take: 20 });
  }

  /**
   * Any form by id, whichever account holds it: only for entry points that learn the account from the form.
   * One query (findOne with relations makes two).
   */
  findById(id: string): Promise<Form | null> {
    return this.forms
      .createQueryBuilder('form')
      .leftJoinAndSelect('form.domain', 'domain')
      .leftJoinAndSelect('form.collection', 'collection')
      .where('form.id = :id', { id })
      .getOne();
  }

  findByConfirmationToken(tokenHash: string): Promise<Form | null> {
    return this.forms.findOne({ where: { confirmationTokenHash: tokenHash, kind: 'instant' }, relations: { domain: true } });
  }

  /** Marks an instant form confirmed; false when it was confirmed already (a second click). */
  async confirm(formId: string): Promise<boolean> {
    const result = await this.forms
      .createQueryBuilder()
      .update(Form)
      .set({ confirmedAt: () => 'now()' })
      .where('id = :formId AND confirmed_at IS NULL', { formId })
      .execute();
    return (result.affected ?? 0) > 0;
  }
}

/** What a listing shows of a submission (not the uploads a held one keeps). */
const SUBMISSION_COLUMNS: (keyof FormSubmission)[] = [
  'id',
  'formId',
  'status',
  'spamReason',
  'fields',
  'files',
  'messageIds',
  'notificationMessageIds',
  'notificationHeld',
  'ip',
  'userAgent',
  'origin',
  'createdAt',
];

function validSettings(value: Record<string, unknown>, options: FormCheckOptions = { requireRecipients: true }): FormSettings {
  const check = new SettingsChecker();
  const settings = checkFormSettings(value, 'settings', check, options);
  if (!settings) throw AppException.validation(check.errors.map((e) => ({ ...e, field: e.field.replace(/^settings\./, '') })));
  return settings;
}
