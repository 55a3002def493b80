import { createHash } from 'node:crypto';
import type { ObjectLiteral, SelectQueryBuilder } from 'typeorm';
import { AppException } from '../errors/app.exception';

/**
 * Where a newest-first page ended: its last row's `created_at` as PostgreSQL holds it, to the microsecond (UTC,
 * `2026-01-01T00:00:00.123456Z`), and its id. A JavaScript Date keeps milliseconds only: a cursor made from one
 * would skip the rows created later in the same millisecond.
 */
export interface PagePosition {
  createdAt: string;
  id: string;
}

/**
 * Where the previous page of a listing ended, and the total counted for its first page (null: the listing does not
 * count). The following pages answer that total instead of counting the table again, so a total is as of the first
 * page: rows added or removed while a client pages do not change it.
 */
export interface PageCursor extends PagePosition {
  total: number | null;
}

/** Longest row id a cursor may name (ids are a prefix and 26 characters). */
const MAX_ID_LENGTH = 64;

/**
 * The opaque cursor after `last` of a listing. `listing` names the listing and its filter (the form, the status …):
 * a cursor is refused by any other, whose total it does not hold.
 */
export function encodePageCursor(listing: string, last: PagePosition, total: number | null): string {
  return Buffer.from(JSON.stringify([last.createdAt, last.id, total, listingTag(listing)])).toString('base64url');
}

/** The cursor's content; a 400 VALIDATION_ERROR on `cursor` for anything this listing did not give out. */
export function decodePageCursor(listing: string, cursor: string): PageCursor {
  const decoded = parse(cursor);
  if (!decoded || decoded.tag !== listingTag(listing)) throw AppException.invalidField('cursor', 'is not a cursor this listing returned');
  return decoded.cursor;
}

function parse(cursor: string): { cursor: PageCursor; tag: string } | null {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    return null;
  }
  if (!Array.isArray(value) || value.length !== 4) return null;
  const [at, id, total, tag] = value as unknown[];
  if (typeof at !== 'string' || typeof id !== 'string' || typeof tag !== 'string' || !isPageTime(at)) return null;
  if (id === '' || id.length > MAX_ID_LENGTH || id.includes('\0')) return null;
  if (total !== null && (typeof total !== 'number' || !Number.isSafeInteger(total) || total < 0)) return null;
  return { cursor: { createdAt: at, id, total }, tag };
}

/** PAGE_TIME_FORMAT wrote it: anything else (another format, a day that does not exist, a year before 1970) did not. */
function isPageTime(at: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/.test(at)) return false;
  const toMilliseconds = `${at.slice(0, 23)}Z`;
  const date = new Date(toMilliseconds);
  return !Number.isNaN(date.getTime()) && date.toISOString() === toMilliseconds && date.getUTCFullYear() >= 1970;
}

/** The opaque cursor after `lastKey` of a listing in key order (a list's subscribers by address). */
export function encodeKeyCursor(lastKey: string): string {
  return Buffer.from(lastKey).toString('base64url');
}

/** The key a key-order cursor names; a 400 VALIDATION_ERROR on `cursor` for anything no such listing gave out. */
export function decodeKeyCursor(cursor: string, maxKeyLength: number): string {
  const key = Buffer.from(cursor, 'base64url').toString('utf8');
  // Invalid UTF-8 decodes to U+FFFD; NUL cannot be stored: neither came from a cursor a listing gave out.
  if (key === '' || key.length > maxKeyLength || /[\uFFFD\0]/.test(key)) {
    throw AppException.invalidField('cursor', 'is not a cursor this listing returned');
  }
  return key;
}

/** `created_at` in UTC to the microsecond, as a cursor holds it. */
const PAGE_TIME_FORMAT = 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"';

/**
 * Up to `limit` rows of `query` (one entity, no joins; its alias has `createdAt` and `id`) newest first, after
 * `after`, and where the page ended when more rows follow. The order and the comparison are on the columns themselves
 * (their index serves both); the last row's time is read as text beside the rows, so the cursor keeps its microseconds.
 */
export async function newestFirstPage<T extends ObjectLiteral & { id: string }>(
  query: SelectQueryBuilder<T>,
  after: PagePosition | null,
  limit: number,
): Promise<{ rows: T[]; next: PagePosition | null }> {
  const { alias } = query;
  const page = query.clone().addSelect(`to_char(${alias}.createdAt AT TIME ZONE 'UTC', :pageTimeFormat)`, 'page_created_at');
  page.setParameter('pageTimeFormat', PAGE_TIME_FORMAT);
  if (after) {
    page.andWhere(`(${alias}.createdAt, ${alias}.id) < (CAST(:pageCreatedAt AS timestamptz), :pageId)`, {
      pageCreatedAt: after.createdAt,
      pageId: after.id,
    });
  }
  const { entities, raw } = await page
    .orderBy(`${alias}.createdAt`, 'DESC')
    .addOrderBy(`${alias}.id`, 'DESC')
    .take(limit + 1)
    .getRawAndEntities<{ page_created_at: string }>();
  const rows = entities.slice(0, limit);
  // Without joins each raw row is the entity at the same place.
  const last = entities.length > limit ? rows[rows.length - 1] : undefined;
  return { rows, next: last ? { createdAt: raw[rows.length - 1].page_created_at, id: last.id } : null };
}

/** A short digest of the listing, so that a cursor says which one it belongs to without carrying its ids. */
function listingTag(listing: string): string {
  return createHash('sha256').update(listing).digest('base64url').slice(0, 8);
}
