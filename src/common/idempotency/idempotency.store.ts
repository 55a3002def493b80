import { Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { ExpiredRows } from '../expired-rows';
import { uniqueViolation } from '../errors/unique-violation';
import { IDEMPOTENCY_RECORD_KEY } from './idempotency-record.entity';

/** D-17: an answer is replayed for 24 h. */
export const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;

/** Who used which Idempotency-Key on which route with which request: set on the request by the interceptor. */
export interface IdempotencyClaim {
  /** `key:<API key id>`, or `ip:<address>` for a call without a credential. */
  scope: string;
  /** Method and path: `POST /v1/send`. */
  route: string;
  keyHash: string;
  requestHash: string;
  /** Set by the route once it wrote the answer with its rows; otherwise the interceptor writes it. */
  recorded?: boolean;
}

/** A claim with the answer to keep: what a route writes in the same statement as its rows. */
export interface IdempotentAnswer {
  claim: IdempotencyClaim;
  statusCode: number;
  body: unknown;
}

export interface StoredAnswer {
  requestHash: string;
  statusCode: number;
  body: unknown;
}

/** Thrown when the key was used already: the interceptor replays `stored` (or answers 409 for another body). */
export class IdempotentReplay extends Error {
  constructor(readonly stored: StoredAnswer) {
    super('Idempotency-Key used already');
  }
}

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      idempotency?: IdempotencyClaim;
    }
  }
}

/** The durable half of D-17: answers in PostgreSQL, the source of truth when Redis forgot or was down. */
@Injectable()
export class IdempotencyStore implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly expired: ExpiredRows;

  constructor(private readonly dataSource: DataSource) {
    this.expired = new ExpiredRows(dataSource, 'idempotency_records');
  }

  onApplicationBootstrap(): void {
    this.expired.start();
  }

  onApplicationShutdown(): void {
    this.expired.stop();
  }

  /** The live answer kept for this claim's key, if any. */
  async find(claim: IdempotencyClaim): Promise<StoredAnswer | null> {
    const rows: { request_hash: string; status_code: number; body: unknown }[] = await this.dataSource.query(
      'SELECT request_hash, status_code, body FROM idempotency_records WHERE scope = $1 AND route = $2 AND key_hash = $3 AND expires_at > now()',
      [claim.scope, claim.route, claim.keyHash],
    );
    const row = rows[0];
    return row ? { requestHash: row.request_hash, statusCode: row.status_code, body: row.body } : null;
  }

  /**
   * Runs `write`, which stores the answer with the route's rows. When the key was used already (its record
   * is there), the first answer comes back as an IdempotentReplay; an expired record is dropped and the write
   * tried once more.
   */
  async guard<T>(claim: IdempotencyClaim | undefined, write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } catch (err) {
      if (!claim || uniqueViolation(err) !== IDEMPOTENCY_RECORD_KEY) throw err;
      const stored = await this.find(claim);
      if (stored) throw new IdempotentReplay(stored);
      await this.dataSource.query(
        'DELETE FROM idempotency_records WHERE scope = $1 AND route = $2 AND key_hash = $3 AND expires_at <= now()',
        [claim.scope, claim.route, claim.keyHash],
      );
      return write();
    }
  }

  /**
   * Writes the answer in the route's transaction, beside its effect. A key used already fails on the record's
   * key: inside guard(), the transaction rolls back and the first answer is replayed.
   */
  async record(answer: IdempotentAnswer, manager: EntityManager): Promise<void> {
    await manager.query(INSERT_RECORD, idempotencyRecordValues(answer));
  }

  /** Keeps the answer of a route that wrote no rows of its own (a replay of it is all the key promises). */
  async save(answer: IdempotentAnswer): Promise<void> {
    await this.dataSource.query(`${INSERT_RECORD} ON CONFLICT (scope, route, key_hash) DO NOTHING`, idempotencyRecordValues(answer));
  }

  purgeExpired(): Promise<void> {
    return this.expired.purge();
  }
}

/** The columns a record is inserted with, in the order of idempotencyRecordValues. */
export const IDEMPOTENCY_RECORD_COLUMNS = 'scope, route, key_hash, request_hash, status_code, body, expires_at';

const INSERT_RECORD = `INSERT INTO idempotency_records (${IDEMPOTENCY_RECORD_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7)`;

/** The INSERT values of a record, in the order of IDEMPOTENCY_RECORD_COLUMNS. */
export function idempotencyRecordValues({ claim, statusCode, body }: IdempotentAnswer): unknown[] {
  const expiresAt = new Date(Date.now() + IDEMPOTENCY_TTL_MS);
  return [claim.scope, claim.route, claim.keyHash, claim.requestHash, statusCode, JSON.stringify(body), expiresAt];
}
