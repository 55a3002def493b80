import { AppException } from '../errors/app.exception';
import { ErrorCode } from '../errors/error-code';
import { decodeKeyCursor, decodePageCursor, encodeKeyCursor, encodePageCursor } from './page-cursor';

const LISTING = 'submissions:frm_1:spam';
const last = { createdAt: '2026-06-09T10:00:00.123456Z', id: 'sub_01jxyzabcdefghjkmnpqrstvwx' };
const encoded = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

function refusal(listing: string, cursor: string): unknown {
  try {
    decodePageCursor(listing, cursor);
  } catch (err) {
    return err instanceof AppException ? { status: err.status, code: err.code, fields: err.details?.fields } : err;
  }
  return 'accepted';
}

describe('page cursors', () => {
  it('carry where the page ended and the first page’s total, and fit the cursor parameter (200 characters)', () => {
    const cursor = encodePageCursor(LISTING, last, 123_456_789);
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(cursor.length).toBeLessThanOrEqual(200);
    expect(decodePageCursor(LISTING, cursor)).toEqual({ ...last, total: 123_456_789 });
  });

  it('keep the microseconds of the creation time, which a JavaScript Date would lose', () => {
    const sameMillisecond = { ...last, createdAt: '2026-06-09T10:00:00.123999Z' };
    expect(decodePageCursor(LISTING, encodePageCursor(LISTING, sameMillisecond, 3)).createdAt).toBe('2026-06-09T10:00:00.123999Z');
  });

  it('may carry no total, for a listing that does not count', () => {
    expect(decodePageCursor(LISTING, encodePageCursor(LISTING, last, null))).toEqual({ ...last, total: null });
  });

  it('are refused by another listing or filter, whose total they do not hold', () => {
    const cursor = encodePageCursor(LISTING, last, 3);
    expect(refusal('submissions:frm_1:', cursor)).toMatchObject({ status: 400 });
    expect(refusal('submissions:frm_2:spam', cursor)).toMatchObject({ status: 400 });
  });

  const tag = JSON.parse(Buffer.from(encodePageCursor(LISTING, last, 3), 'base64url').toString())[3] as string;
  it.each([
    ['not base64url JSON', 'garbage!'],
    ['an empty cursor', ''],
    ['a cursor of an earlier version', encoded([last.createdAt, last.id])],
    ['an object', encoded({ createdAt: last.createdAt, id: last.id, total: 3, tag })],
    ['a date that is not one', encoded(['2026-13-45T99:00:00.000000Z', last.id, 3, tag])],
    ['a day that does not exist', encoded(['2026-02-30T10:00:00.000000Z', last.id, 3, tag])],
    ['a date in another format', encoded(['2026-06-09 10:00:00.123456+00', last.id, 3, tag])],
    ['a date to the millisecond only', encoded(['2026-06-09T10:00:00.123Z', last.id, 3, tag])],
    ['a date with SQL after it', encoded(["2026-06-09T10:00:00.123456Z'; --", last.id, 3, tag])],
    ['a number for the date', encoded([Date.parse('2026-06-09T10:00:00Z'), last.id, 3, tag])],
    ['a year before 1970', encoded(['0001-01-01T00:00:00.000000Z', last.id, 3, tag])],
    ['a number for the id', encoded([last.createdAt, 7, 3, tag])],
    ['an id with NUL', encoded([last.createdAt, 'sub_\u0000', 3, tag])],
    ['a huge id', encoded([last.createdAt, 'x'.repeat(65), 3, tag])],
    ['a negative total', encoded([last.createdAt, last.id, -1, tag])],
    ['a fractional total', encoded([last.createdAt, last.id, 1.5, tag])],
    ['a total past 2^53', encoded([last.createdAt, last.id, 2 ** 60, tag])],
    ['a total as text', encoded([last.createdAt, last.id, '3', tag])],
  ])('answer %s with a 400 naming the cursor', (_, cursor) => {
    expect(refusal(LISTING, cursor)).toEqual({
      status: 400,
      code: ErrorCode.ValidationFailed,
      fields: [{ field: 'cursor', message: 'is not a cursor this listing returned' }],
    });
  });
});

describe('key-order cursors', () => {
  it('carry the last key as base64url', () => {
    const cursor = encodeKeyCursor('ada@example.org');
    expect(cursor).toBe('YWRhQGV4YW1wbGUub3Jn');
    expect(decodeKeyCursor(cursor, 320)).toBe('ada@example.org');
  });

  it.each([
    ['nothing', ''],
    ['a key longer than the longest', encodeKeyCursor('x'.repeat(321))],
    ['invalid UTF-8', Buffer.from([0xff, 0xfe]).toString('base64url')],
    ['a key with NUL', encodeKeyCursor('a\u0000b')],
  ])('answer %s with a 400 naming the cursor', (_, cursor) => {
    let refusal: unknown = 'accepted';
    try {
      decodeKeyCursor(cursor, 320);
    } catch (err) {
      refusal = err instanceof AppException ? { status: err.status, code: err.code, fields: err.details?.fields } : err;
    }
    expect(refusal).toEqual({
      status: 400,
      code: ErrorCode.ValidationFailed,
      fields: [{ field: 'cursor', message: 'is not a cursor this listing returned' }],
    });
  });
});
