import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, In, Repository } from 'typeorm';
import { normalizeEmailAddress } from '../common/email-address';
import { AppException } from '../common/errors/app.exception';
import { decodePageCursor, encodePageCursor, newestFirstPage } from '../common/http/page-cursor';
import { newId } from '../common/ids';
import { allFulfilled, MicroBatch, settle } from '../common/micro-batch';
import { SuppressionEntry, SuppressionReason } from './suppression-entry.entity';
import { SuppressionLifts } from './suppression-lifts';

export type { SuppressionReason } from './suppression-entry.entity';

interface SuppressionLookup {
  accountId: string;
  /** Lower-cased, distinct. */
  addresses: string[];
}

const MAX_LOOKUP_BATCH = 200;
const MAX_CONCURRENT_LOOKUPS = 2;

export interface SuppressionPage {
  entries: SuppressionEntry[];
  /** Entries matching the filter in all pages. */
  total: number;
  /** Pass as `cursor` for the next page; null on the last page. */
  nextCursor: string | null;
}

/** An address to suppress in an account: why, and what caused it (a message id). */
export interface NewSuppression {
  accountId: string;
  email: string;
  reason: SuppressionReason;
  source?: string;
}

export interface SuppressionListQuery {
  limit: number;
  cursor?: string;
  reason?: SuppressionReason;
}

/**
 * The account's suppression list (D-19): addresses it never sends to again. Addresses are kept lower-cased and
 * compared case-insensitively. The only writer of suppression entries.
 */
@Injectable()
export class SuppressionService {
  /** Lookups of concurrent sends, of any accounts, share one query. */
  private readonly lookups = new MicroBatch<SuppressionLookup, Set<string>>(
    (lookups) => this.lookupBatch(lookups),
    MAX_LOOKUP_BATCH,
    MAX_CONCURRENT_LOOKUPS,
  );

  constructor(
    @InjectRepository(SuppressionEntry) private readonly entries: Repository<SuppressionEntry>,
    private readonly lifts: SuppressionLifts,
  ) {}

  /** Adds the address; an address already on the list keeps its first entry (idempotent). */
  async add(accountId: string, email: string, reason: SuppressionReason, source?: string): Promise<SuppressionEntry> {
    return (await this.upsert(accountId, email, reason, source)).entry;
  }

  /** Like add, and says whether the entry is new. */
  async upsert(
    accountId: string,
    email: string,
    reason: SuppressionReason,
    source?: string,
  ): Promise<{ entry: SuppressionEntry; created: boolean }> {
    const address = normalizeEmailAddress(email);
    const inserted = await this.entries
      .createQueryBuilder()
      .insert()
      .values({ id: newId('sup'), accountId, email: address, reason, source: source ?? null })
      .orIgnore()
      .returning('*')
      .execute();
    const created = (inserted.raw as unknown[]).length > 0;
    const entry = await this.entries.findOneByOrFail({ accountId, email: address });
    return { entry, created };
  }

  /**
   * Adds the addresses in the caller's transaction (provider events and delivery reports commit their suppressions
   * with their events); an address already on the list keeps its first entry.
   */
  async addWithin(manager: EntityManager, entries: NewSuppression[]): Promise<void> {
    if (entries.length === 0) return;
    await manager.query(
      `INSERT INTO suppression_entries (id, account_id, email, reason, source)
       SELECT * FROM unnest($1::varchar[], $2::varchar[], $3::varchar[], $4::varchar[], $5::varchar[])
       ON CONFLICT (account_id, email) DO NOTHING`,
      [
        entries.map(() => newId('sup')),
        entries.map((e) => e.accountId),
        entries.map((e) => normalizeEmailAddress(e.email)),
        entries.map((e) => e.reason),
        entries.map((e) => e.source ?? null),
      ],
    );
  }

  /** The subset of `emails` (compared case-insensitively) that is suppressed, as lower-cased addresses. */
  async suppressedAmong(accountId: string, emails: string[]): Promise<Set<string>> {
    const addresses = [...new Set(emails.map(normalizeEmailAddress))];
    if (addresses.length === 0) return new Set();
    return this.lookups.submit({ accountId, addresses });
  }

  /** One query for every lookup; if it fails, each runs alone, so a value PostgreSQL refuses fails its own send only. */
  private async lookupBatch(lookups: SuppressionLookup[]): Promise<PromiseSettledResult<Set<string>>[]> {
    if (lookups.length > 1) {
      try {
        return allFulfilled(await this.lookUp(lookups));
      } catch {
        // fall through: one by one
      }
    }
    return Promise.all(lookups.map((lookup) => settle(this.lookUp([lookup]).then(([found]) => found))));
  }

  private async lookUp(lookups: SuppressionLookup[]): Promise<Set<string>[]> {
    const pairs = lookups.flatMap(({ accountId, addresses }) => addresses.map((email) => [accountId, email]));
    const rows: { account_id: string; email: string }[] = await this.entries.query(
      'SELECT s.account_id, s.email FROM suppression_entries s ' +
        'JOIN unnest($1::varchar[], $2::varchar[]) AS q(account_id, email) ON s.account_id = q.account_id AND s.email = q.email',
      [pairs.map(([accountId]) => accountId), pairs.map(([, email]) => email)],
    );
    const suppressed = new Set(rows.map((row) => `${row.account_id} ${row.email}`));
    return lookups.map(({ accountId, addresses }) => new Set(addresses.filter((email) => suppressed.has(`${accountId} ${email}`))));
  }

  /** The entries of `emails` (compared case-insensitively) on the account's list, one query. */
  async entriesAmong(accountId: string, emails: string[]): Promise<SuppressionEntry[]> {
    const addresses = [...new Set(emails.map(normalizeEmailAddress))];
    if (addresses.length === 0) return [];
    return this.entries.findBy({ accountId, email: In(addresses) });
  }

  async isSuppressed(accountId: string, email: string): Promise<boolean> {
    return (await this.find(accountId, email)) !== null;
  }

  find(accountId: string, email: string): Promise<SuppressionEntry | null> {
    return this.entries.findOneBy({ accountId, email: normalizeEmailAddress(email) });
  }

  /**
   * Newest first, keyset-paged: the cursor names the last entry of the previous page and carries the count made for
   * the first (page-cursor.ts), so only the first page counts the account's entries.
   */
  async list(accountId: string, query: SuppressionListQuery): Promise<SuppressionPage> {
    const listing = `suppression:${accountId}:${query.reason ?? ''}`;
    const after = query.cursor ? decodePageCursor(listing, query.cursor) : null;
    const base = this.entries.createQueryBuilder('entry').where('entry.accountId = :accountId', { accountId });
    if (query.reason) base.andWhere('entry.reason = :reason', { reason: query.reason });
    const total = after?.total ?? (await base.clone().getCount());
    const { rows: entries, next } = await newestFirstPage(base, after, query.limit);
    return { entries, total, nextCursor: next && encodePageCursor(listing, next, total) };
  }

  /** Takes the address off the list (and tells SuppressionLifts' listeners); 404 if it is not on it. */
  async remove(accountId: string, email: string): Promise<SuppressionEntry> {
    const entry = await this.find(accountId, email);
    if (!entry) throw AppException.notFound('Suppression entry', normalizeEmailAddress(email));
    await this.entries.delete({ id: entry.id, accountId });
    this.lifts.lifted(accountId, entry.email);
    return entry;
  }
}
