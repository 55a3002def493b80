import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Brackets, Repository } from 'typeorm';
import { AppException } from '../common/errors/app.exception';
import { newId } from '../common/ids';
import { SuppressionEntry, SuppressionReason } from './suppression-entry.entity';

export type { SuppressionReason } from './suppression-entry.entity';

export interface SuppressionPage {
  entries: SuppressionEntry[];
  /** Entries matching the filter in all pages. */
  total: number;
  /** Pass as `cursor` for the next page; null on the last page. */
  nextCursor: string | null;
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
  constructor(@InjectRepository(SuppressionEntry) private readonly entries: Repository<SuppressionEntry>) {}

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
    const address = normalize(email);
    const inserted = await this.entries
      .createQueryBuilder()
      .insert()
      .values({ id: newId('sup'), accountId, email: address, reason, source: source ?? null })
      .orIgnore()
      .returning('*')
      .execute();
    const created = inserted.raw.length > 0;
    const entry = await this.entries.findOneByOrFail({ accountId, email: address });
    return { entry, created };
  }

  /** The subset of `emails` (compared case-insensitively) that is suppressed, as lower-cased addresses; one query. */
  async suppressedAmong(accountId: string, emails: string[]): Promise<Set<string>> {
    const addresses = [...new Set(emails.map(normalize))];
    if (addresses.length === 0) return new Set();
    const rows: { email: string }[] = await this.entries.query(
      'SELECT email FROM suppression_entries WHERE account_id = $1 AND email = ANY($2::varchar[])',
      [accountId, addresses],
    );
    return new Set(rows.map((row) => row.email));
  }

  async isSuppressed(accountId: string, email: string): Promise<boolean> {
    return (await this.find(accountId, email)) !== null;
  }

  find(accountId: string, email: string): Promise<SuppressionEntry | null> {
    return this.entries.findOneBy({ accountId, email: normalize(email) });
  }

  /** Newest first, keyset-paged: the cursor names the last entry of the previous page. */
  async list(accountId: string, query: SuppressionListQuery): Promise<SuppressionPage> {
    const base = this.entries.createQueryBuilder('entry').where('entry.accountId = :accountId', { accountId });
    if (query.reason) base.andWhere('entry.reason = :reason', { reason: query.reason });
    const total = await base.clone().getCount();

    const page = base.clone();
    if (query.cursor) {
      const after = decodeCursor(query.cursor);
      page.andWhere(
        new Brackets((qb) =>
          qb
            .where('entry.createdAt < :afterCreatedAt', { afterCreatedAt: after.createdAt })
            .orWhere('entry.createdAt = :afterCreatedAt AND entry.id < :afterId', { afterId: after.id }),
        ),
      );
    }
    const rows = await page
      .orderBy('entry.createdAt', 'DESC')
      .addOrderBy('entry.id', 'DESC')
      .take(query.limit + 1)
      .getMany();
    const entries = rows.slice(0, query.limit);
    const last = entries[entries.length - 1];
    const nextCursor = rows.length > query.limit && last ? encodeCursor(last) : null;
    return { entries, total, nextCursor };
  }

  /** Takes the address off the list; 404 if it is not on it. */
  async remove(accountId: string, email: string): Promise<SuppressionEntry> {
    const entry = await this.find(accountId, email);
    if (!entry) throw AppException.notFound('Suppression entry', normalize(email));
    await this.entries.delete({ id: entry.id, accountId });
    return entry;
  }
}

function normalize(email: string): string {
  return email.trim().toLowerCase();
}

function encodeCursor(entry: SuppressionEntry): string {
  return Buffer.from(JSON.stringify([entry.createdAt.toISOString(), entry.id])).toString('base64url');
}

function decodeCursor(cursor: string): { createdAt: Date; id: string } {
  try {
    const [createdAt, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as [string, string];
    const date = new Date(createdAt);
    if (typeof id !== 'string' || Number.isNaN(date.getTime())) throw new Error('bad cursor');
    return { createdAt: date, id };
  } catch {
    throw AppException.invalidField('cursor', 'is not a cursor this list returned');
  }
}
