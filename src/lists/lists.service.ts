import { Injectable } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import { DataSource, Repository } from 'typeorm';
import { normalizeEmailAddress } from '../common/email-address';
import { AppException } from '../common/errors/app.exception';
import { ErrorCode } from '../common/errors/error-code';
import { foreignKeyViolation, uniqueViolation } from '../common/errors/unique-violation';
import { decodeKeyCursor, decodePageCursor, encodeKeyCursor, encodePageCursor, newestFirstPage } from '../common/http/page-cursor';
import { newId } from '../common/ids';
import type { AddSubscribersResultDto } from './dto/subscriber.dto';
import { ListSubscriber, SubscriberStatus } from './list-subscriber.entity';
import { MailingList } from './mailing-list.entity';
import { checkSubscribers, subscriberEntries } from './subscriber-entries';

/** Longest address a subscriber cursor may name. */
const MAX_ADDRESS_LENGTH = 320;

export interface SubscriberCounts {
  subscribed: number;
  unsubscribed: number;
}

/** A list with how many subscribers it has in each status. */
export interface ListSummary {
  list: MailingList;
  subscribers: SubscriberCounts;
}

export interface PageQuery {
  limit: number;
  cursor?: string;
}

/** A subscriber a list send writes to. */
export interface Recipient {
  email: string;
  name: string | null;
}

const UNIQUE_NAME = 'UQ_mailing_lists_account_name';

/**
 * Mailing lists and their subscribers (D-1: another account's list is a 404). The only writer of both; list
 * sends (the email module) read subscribers through it.
 */
@Injectable()
export class ListsService {
  constructor(
    @InjectRepository(MailingList) private readonly lists: Repository<MailingList>,
    @InjectRepository(ListSubscriber) private readonly subscribers: Repository<ListSubscriber>,
    @InjectDataSource() private readonly dataSource: DataSource,
  ) {}

  /** 409 CONFLICT when the account has a list of that name. */
  async create(accountId: string, input: { name: string; description?: string }): Promise<ListSummary> {
    const id = newId('list');
    try {
      await this.lists.insert({ id, accountId, name: input.name, description: input.description ?? null });
    } catch (err) {
      throw uniqueViolation(err) === UNIQUE_NAME ? duplicateName(input.name) : err;
    }
    return { list: await this.get(accountId, id), subscribers: { subscribed: 0, unsubscribed: 0 } };
  }

  /** Newest first, keyset-paged: the cursor names the last list of the previous page. */
  async list(accountId: string, query: PageQuery): Promise<{ lists: ListSummary[]; nextCursor: string | null }> {
    const listing = `lists:${accountId}`;
    const after = query.cursor ? decodePageCursor(listing, query.cursor) : null;
    const { rows: lists, next } = await newestFirstPage(
      this.lists.createQueryBuilder('l').where('l.accountId = :accountId', { accountId }),
      after,
      query.limit,
    );
    const counts = await this.counts(lists.map((l) => l.id));
    return {
      lists: lists.map((list) => ({ list, subscribers: counts.get(list.id) ?? { subscribed: 0, unsubscribed: 0 } })),
      nextCursor: next && encodePageCursor(listing, next, null),
    };
  }

  /** A list of the account; 404 for unknown and foreign ids alike. */
  async get(accountId: string, listId: string): Promise<MailingList> {
    const list = await this.lists.findOneBy({ id: listId, accountId });
    if (!list) throw AppException.notFound('List', listId);
    return list;
  }

  async summary(accountId: string, listId: string): Promise<ListSummary> {
    const list = await this.get(accountId, listId);
    const counts = await this.counts([list.id]);
    return { list, subscribers: counts.get(list.id) ?? { subscribed: 0, unsubscribed: 0 } };
  }

  /** Fields left out keep their value; description null removes it. 409 CONFLICT for a name the account uses. */
  async update(accountId: string, listId: string, changes: { name?: string; description?: string | null }): Promise<ListSummary> {
    const list = await this.get(accountId, listId);
    const values = {
      ...(changes.name !== undefined ? { name: changes.name } : {}),
      ...(changes.description !== undefined ? { description: changes.description } : {}),
    };
    if (Object.keys(values).length > 0) {
      try {
        await this.lists.update({ id: list.id, accountId }, values);
      } catch (err) {
        throw uniqueViolation(err) === UNIQUE_NAME ? duplicateName(changes.name ?? list.name) : err;
      }
    }
    return this.summary(accountId, listId);
  }

  /** Deletes the list and its subscribers. Its list sends stay: one still running makes nothing more and ends. */
  async remove(accountId: string, listId: string): Promise<MailingList> {
    const list = await this.get(accountId, listId);
    await this.lists.delete({ id: list.id, accountId });
    return list;
  }

  /**
   * Adds up to 1000 subscribers (D-14) with one INSERT … ON CONFLICT. Invalid entries are reported by index and
   * the others added. An address on the list already keeps its status (an unsubscribed one is never
   * re-subscribed by this call); a name given replaces its stored name.
   */
  async addSubscribers(accountId: string, listId: string, body: unknown): Promise<AddSubscribersResultDto> {
    const entries = subscriberEntries(body);
    const list = await this.get(accountId, listId);
    const { valid, invalid, repeats } = checkSubscribers(entries);
    if (valid.length === 0) return { added: 0, existing: repeats, invalid };
    let rows: { inserted: boolean }[];
    try {
      rows = await this.dataSource.query(
        `WITH written AS (
           INSERT INTO list_subscribers (list_id, email, name)
           SELECT $1, e.email, e.name FROM unnest($2::varchar[], $3::varchar[]) AS e(email, name)
           ON CONFLICT (list_id, email) DO UPDATE SET name = EXCLUDED.name
             WHERE EXCLUDED.name IS NOT NULL AND list_subscribers.name IS DISTINCT FROM EXCLUDED.name
           RETURNING (xmax = 0) AS inserted
         )
         SELECT inserted FROM written`,
        [list.id, valid.map((s) => s.email), valid.map((s) => s.name ?? null)],
      );
    } catch (err) {
      // The list was deleted meanwhile.
      if (foreignKeyViolation(err)) throw AppException.notFound('List', listId);
      throw err;
    }
    const added = rows.filter((row) => row.inserted).length;
    return { added, existing: valid.length - added + repeats, invalid };
  }

  /** In address order, keyset-paged: the cursor names the last address of the previous page. */
  async listSubscribers(
    accountId: string,
    listId: string,
    query: PageQuery & { status?: SubscriberStatus },
  ): Promise<{ subscribers: ListSubscriber[]; nextCursor: string | null }> {
    const list = await this.get(accountId, listId);
    const page = this.subscribers.createQueryBuilder('s').where('s.listId = :listId', { listId: list.id });
    if (query.status) page.andWhere('s.status = :status', { status: query.status });
    if (query.cursor) page.andWhere('s.email > :after', { after: decodeKeyCursor(query.cursor, MAX_ADDRESS_LENGTH) });
    const rows = await page
      .orderBy('s.email', 'ASC')
      .take(query.limit + 1)
      .getMany();
    const subscribers = rows.slice(0, query.limit);
    const last = subscribers[subscribers.length - 1];
    return { subscribers, nextCursor: rows.length > query.limit && last ? encodeKeyCursor(last.email) : null };
  }

  /** Takes an address off the list (matched case-insensitively); 404 if it is not on it. */
  async removeSubscriber(accountId: string, listId: string, email: string): Promise<string> {
    const list = await this.get(accountId, listId);
    const address = normalizeEmailAddress(email);
    const result = await this.subscribers.delete({ listId: list.id, email: address });
    if (!result.affected) throw AppException.notFound('Subscriber', address);
    return address;
  }

  /**
   * Marks a subscriber of one of the account's lists unsubscribed (an unsubscribe link of a list send). True
   * when this call unsubscribed it; false when it is not on the list or was unsubscribed already.
   */
  async markUnsubscribed(accountId: string, listId: string, email: string): Promise<boolean> {
    const rows: { moved: number }[] = await this.dataSource.query(
      `WITH moved AS (
         UPDATE list_subscribers s SET status = 'unsubscribed', unsubscribed_at = now()
         FROM mailing_lists l
         WHERE l.id = s.list_id AND l.account_id = $1 AND s.list_id = $2 AND s.email = $3 AND s.status = 'subscribed'
         RETURNING 1
       )
       SELECT count(*)::int AS moved FROM moved`,
      [accountId, listId, normalizeEmailAddress(email)],
    );
    return rows[0].moved > 0;
  }

  /**
   * How many subscribers a list send reaches now (past `after`, '' for all): subscribed and not on the account's
   * suppression list. One query.
   */
  async countSendable(accountId: string, listId: string, after = ''): Promise<number> {
    const rows: { n: number }[] = await this.dataSource.query(
      `SELECT count(*)::int AS n FROM list_subscribers s
       WHERE s.list_id = $1 AND s.status = 'subscribed' AND s.email > $3
         AND NOT EXISTS (SELECT 1 FROM suppression_entries x WHERE x.account_id = $2 AND x.email = s.email)`,
      [listId, accountId, after],
    );
    return rows[0].n;
  }

  /** The next `limit` subscribed addresses after `after` ('' for the first page), in key order. */
  subscribedPage(listId: string, after: string, limit: number): Promise<Recipient[]> {
    return this.dataSource.query(
      `SELECT email, name FROM list_subscribers
       WHERE list_id = $1 AND status = 'subscribed' AND email > $2
       ORDER BY email LIMIT $3`,
      [listId, after, limit],
    );
  }

  private async counts(listIds: string[]): Promise<Map<string, SubscriberCounts>> {
    if (listIds.length === 0) return new Map();
    const rows: { list_id: string; status: SubscriberStatus; n: number }[] = await this.dataSource.query(
      'SELECT list_id, status, count(*)::int AS n FROM list_subscribers WHERE list_id = ANY($1::varchar[]) GROUP BY list_id, status',
      [listIds],
    );
    const counts = new Map<string, SubscriberCounts>(listIds.map((id) => [id, { subscribed: 0, unsubscribed: 0 }]));
    for (const row of rows) counts.get(row.list_id)![row.status] = row.n;
    return counts;
  }
}

function duplicateName(name: string): AppException {
  return new AppException(ErrorCode.Conflict, `A list named ${name} exists already`);
}
