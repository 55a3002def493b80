import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { AppException } from '../common/errors/app.exception';
import { AppConfigService } from '../config/app-config.service';
import type { EmailCredit, Metering } from './usage-statement';
import { RedisService } from '../redis/redis.service';
import { AccountUsageRepository } from './account-usage.repository';
import { QuotaAccountsCache } from './quota-accounts.cache';
import {
  allCounterKeys,
  counterKey,
  costOf,
  fits,
  QuotaAccount,
  QuotaDefinition,
  quotaLimits,
  QuotaRule,
  QUOTAS,
  refusalOf,
  refusingRule,
  reservationRules,
  usedIn,
  windowOf,
} from './quota-policy';
import { QuotaStore, ReserveReply } from './quota.store';

/** Taken before an acceptance commits; given back if it does not. */
export interface QuotaReservation {
  /** The acceptance committed: what it reserved is in account_usage_hourly now. */
  committed(): void;
  /** The acceptance did not commit: gives back what it reserved. */
  release(): Promise<void>;
}

/** One quota of an account as it stands: its limit (null: unlimited), what the window used, when it resets. */
export interface QuotaStanding {
  quota: QuotaDefinition;
  limit: number | null;
  used: number;
  resetAtMs: number;
}

const NOTHING_RESERVED: QuotaReservation = { committed: () => undefined, release: () => Promise.resolve() };

/** While Redis is away, a check tries it again this often (at once when its connection comes back). */
const REDIS_RETRY_MS = 1000;
/** A load waits at most this long for the account's acceptances under way to commit or fail. */
const HELD_WAIT_MS = 5000;

/** Tries of the Redis path before a reservation whose counters keep vanishing is decided against PostgreSQL. */
const MAX_ATTEMPTS = 10;

/** A load of an account's missing counters from PostgreSQL, and the reservations it decides. */
interface CounterLoad {
  /** The hour it reads the windows of: reservations of another hour wait for it and try again. */
  hour: string;
  /** Taking reservations: until it looks at the reservations under way (then it reads the rows). */
  open: boolean;
  participants: { rules: QuotaRule[]; seen: number[]; resolve: (reply: ReserveReply) => void; reject: (err: unknown) => void }[];
  done: Promise<void>;
}

/** Redis could not be asked (not a refusal): the check goes to PostgreSQL. */
class RedisUnreachable extends Error {
  constructor(readonly reason: Error) {
    super(reason.message);
  }
}

/** A reservation between its check and its commit (or failure). */
interface Held {
  rules: readonly QuotaRule[];
  /** Counted in Redis (given back there on failure), or checked against PostgreSQL while Redis was away. */
  inRedis: boolean;
  done: boolean;
  /** Loads waiting for it to settle. */
  waiters: (() => void)[] | null;
}

/**
 * The account quotas of D-13: emails per calendar month by plan, forwarded mail per calendar month by plan
 * (D-37), form submissions per hour and day by tier, and the account's own global_limits. Counted in Redis so that the send path checks them without a database
 * round trip: every counter an acceptance moves is checked and added in one Lua call. A counter that is missing
 * (a new window, Redis restarted or restored a snapshot: QuotaStore keeps counters under the server's run,
 * expired after QUOTA_SYNC_INTERVAL_MS) is loaded from account_usage_hourly,
 * after the account's acceptances under way in this process have committed or failed, so it is exact.
 * While Redis cannot be reached the check runs against PostgreSQL's sums instead (one query), one at a time
 * per account: nothing is refused for Redis being away, and nothing accepted is lost.
 */
@Injectable()
export class QuotaService implements OnModuleInit {
  private readonly logger = new Logger(QuotaService.name);
  private readonly redisKey: (...parts: string[]) => string;
  /** Reservations under way, per account. */
  private readonly held = new Map<string, Set<Held>>();
  /** The counter load under way per account (its reservations share it). */
  private readonly loads = new Map<string, CounterLoad>();
  /** The last PostgreSQL check queued per account, while Redis is away. */
  private readonly databaseTurns = new Map<string, Promise<void>>();
  /** Accounts checked against PostgreSQL while Redis was away: their counters miss what was accepted meanwhile. */
  private readonly checkedWithoutRedis = new Set<string>();
  private redisDown = false;
  private retryRedisAt = 0;

  constructor(
    private readonly config: AppConfigService,
    private readonly store: QuotaStore,
    private readonly accounts: QuotaAccountsCache,
    private readonly usage: AccountUsageRepository,
    redis: RedisService,
  ) {
    this.redisKey = (...parts) => redis.key(...parts);
  }

  onModuleInit(): void {
    this.store.connection.on('ready', () => {
      this.retryRedisAt = 0;
    });
  }

  get enabled(): boolean {
    return this.config.env.QUOTAS_ENABLED;
  }

  /** Counts the metering against every quota of its account, or throws the 429 of the quota it would pass. */
  async reserve(metering: Metering): Promise<QuotaReservation> {
    if (!this.enabled) return NOTHING_RESERVED;
    const { accountId } = metering;
    const cached = this.accounts.get(accountId);
    const account = cached instanceof Promise ? await cached : cached;
    // An unknown account: its insert fails on the foreign key.
    if (!account) return NOTHING_RESERVED;
    const nowMs = Date.now();
    const limits = quotaLimits(account, new Date(nowMs));
    const rules = reservationRules(accountId, limits, metering, nowMs, this.config.env.QUOTA_SYNC_INTERVAL_MS, this.redisKey);
    if (rules.length === 0) return NOTHING_RESERVED;
    if (!this.redisDown || (await this.redisIsBack())) {
      try {
        return await this.reserveInRedis(accountId, rules, nowMs);
      } catch (err) {
        if (!(err instanceof RedisUnreachable)) throw err;
        this.redisGone(err.reason);
      }
    }
    return this.reserveFromDatabase(accountId, rules, nowMs);
  }

  /**
   * Usage reported from outside (POST /api/billing/usage), never refused: it records what happened. `commit`
   * adds it to the hour's row (AccountUsageRepository.addEmails) with whatever else it commits; the account's
   * counters that exist count it too, once, if `commit` succeeds: a rollback (a replayed Idempotency-Key too)
   * gives it back.
   */
  recordReported<T>(accountId: string, emails: number, commit: () => Promise<T>): Promise<T> {
    if (!this.enabled || emails <= 0) return commit();
    const nowMs = Date.now();
    return this.moveWith(accountId, this.emailRules(accountId, emails, nowMs, nowMs), 1, commit);
  }

  /**
   * Gives back emails counted at `credit.countedAt` that will never be sent. `commit` writes the credit
   * (creditStatement) with whatever else it commits; once it has, the counters of the windows holding
   * `countedAt` that still run are lowered. If `commit` fails nothing is given back.
   */
  credit<T>(credit: EmailCredit, commit: () => Promise<T>): Promise<T> {
    if (!this.enabled || credit.emails <= 0) return commit();
    const { accountId, emails, countedAt } = credit;
    return this.moveWith(accountId, this.emailRules(accountId, emails, countedAt.getTime(), Date.now()), -1, commit);
  }

  /**
   * Moves the counters of `rules` with a commit of the usage rows, held meanwhile like a reservation so that a
   * load waits for the rows. An addition (1) moves them before the commit, so that no acceptance meanwhile
   * passes a quota without it, and is given back if the commit fails; a credit (-1) after it, so that none
   * passes on a credit that may not commit. A load already reading the rows may not see the commit: it ends first.
   */
  private async moveWith<T>(accountId: string, rules: QuotaRule[], sign: 1 | -1, commit: () => Promise<T>): Promise<T> {
    await this.loads.get(accountId)?.done;
    const held = this.hold(accountId, rules, sign === 1);
    if (sign === 1) await this.adjust(accountId, rules, 1);
    let result: T;
    try {
      result = await commit();
    } catch (err) {
      await held.release();
      throw err;
    }
    if (sign === -1) await this.adjust(accountId, rules, -1);
    held.committed();
    return result;
  }

  /** The counters `emails` move: every quota that counts emails, in its window holding `atMs` if it still runs at `nowMs`. */
  private emailRules(accountId: string, emails: number, atMs: number, nowMs: number): QuotaRule[] {
    return QUOTAS.filter((quota) => costOf(quota.unit, { emails, submissions: 0 }) > 0)
      .map((quota) => ({ quota, window: windowOf(quota.window, atMs) }))
      .filter(({ window }) => window.endMs > nowMs)
      .map(({ quota, window }) => ({
        quota,
        limit: Infinity,
        cost: emails,
        key: counterKey(this.redisKey, accountId, quota.unit, window.id),
        window,
        ttlMs: 0,
      }));
  }

  /** The account's tier, plan or settings changed: read them again before the next check (on every instance). */
  accountChanged(accountId: string): void {
    void this.accounts.changed(accountId);
  }

  /**
   * The account as the quotas see it, and every quota as it stands: limits from its tier and settings, usage
   * from PostgreSQL (what was accepted). Null: no such account.
   */
  async standing(accountId: string): Promise<{ account: QuotaAccount; quotas: QuotaStanding[] } | null> {
    const account = await this.accounts.get(accountId);
    if (!account) return null;
    const nowMs = Date.now();
    const limits = quotaLimits(account, new Date(nowMs));
    const usage = await this.usage.windows(accountId, nowMs);
    const quotas = QUOTAS.map((quota) => ({
      quota,
      limit: limits[quota.name],
      used: usedIn(usage, quota.unit, quota.window),
      resetAtMs: windowOf(quota.window, nowMs).endMs,
    }));
    return { account, quotas };
  }

  private async reserveInRedis(accountId: string, rules: QuotaRule[], nowMs: number): Promise<QuotaReservation> {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      let reply = await this.redisCall(() => this.store.reserve(rules));
      if (reply.status === 'missing') reply = await this.loadAndReserve(accountId, rules, reply.values, nowMs);
      if (reply.status === 'reserved') return this.hold(accountId, rules, true);
      if (reply.status === 'refused') throw refusal(rules, reply.values, nowMs);
    }
    // Counters that vanish again and again (Redis evicting under memory pressure): decide against PostgreSQL.
    return this.reserveFromDatabase(accountId, rules, nowMs);
  }

  /**
   * Some counter of the reservation is missing (`seen[i]` -1): it joins the account's load, or starts one. A
   * load waits one turn for the reservations that find counters missing at the same time, then until the
   * account's reservations under way here have committed or been given back, reads the account's usage from
   * PostgreSQL, and decides its reservations in one call, the counters they found missing set from the rows
   * if still missing. Only a load sets a missing counter, one load per account at a time, so nothing can be
   * counted on it between the reading and the setting: the values are exact. A reservation that comes once the
   * load has begun waits for it and tries again ('missing').
   */
  private loadAndReserve(accountId: string, rules: QuotaRule[], seen: number[], nowMs: number): Promise<ReserveReply> {
    const hour = windowOf('hour', nowMs).id;
    const participant = (resolve: (reply: ReserveReply) => void, reject: (err: unknown) => void) => ({ rules, seen, resolve, reject });
    const current = this.loads.get(accountId);
    if (current) {
      if (current.open && current.hour === hour)
        return new Promise((resolve, reject) => current.participants.push(participant(resolve, reject)));
      return current.done.then(() => ({ status: 'missing', values: seen }));
    }
    const load: CounterLoad = { hour, open: true, participants: [], done: Promise.resolve() };
    const reply = new Promise<ReserveReply>((resolve, reject) => load.participants.push(participant(resolve, reject)));
    this.loads.set(accountId, load);
    load.done = this.runLoad(accountId, load, nowMs).finally(() => this.loads.delete(accountId));
    return reply;
  }

  private async runLoad(accountId: string, load: CounterLoad, nowMs: number): Promise<void> {
    try {
      // Reservations that find a counter missing in this turn join; replies Redis already sent register their holds.
      await new Promise((resolve) => setImmediate(resolve));
      load.open = false;
      // Checks against PostgreSQL still under way (queued while Redis was away, or in the moment it came back)
      // are not held yet: once decided they are, and the rows must include them before the counter is set.
      await this.databaseTurns.get(accountId);
      await this.heldSettled(accountId);
      const usage = await this.usage.windows(accountId, nowMs);
      const replies = await this.redisCall(() =>
        this.store.reserveTogether(
          load.participants.map(({ rules, seen }) => ({
            rules,
            // Only counters it found missing: one that existed may have counted reservations the rows do not hold yet.
            inits: rules.map((rule, i) => (seen[i] === -1 ? usedIn(usage, rule.quota.unit, rule.quota.window) : -1)),
          })),
        ),
      );
      load.participants.forEach((p, i) => p.resolve(replies[i]));
    } catch (err) {
      load.participants.forEach((p) => p.reject(err));
    }
  }

  /** Resolves once every reservation of the account under way now has committed or been given back (or after HELD_WAIT_MS). */
  private async heldSettled(accountId: string): Promise<void> {
    const held = [...(this.held.get(accountId) ?? [])].filter((h) => !h.done);
    if (held.length === 0) return;
    let timer: NodeJS.Timeout | undefined;
    const waited = Promise.all(held.map((h) => new Promise<void>((resolve) => (h.waiters ??= []).push(resolve))));
    const timeout = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        this.logger.warn(`Loading quota counters of ${accountId}: ${held.length} acceptance(s) still under way after ${HELD_WAIT_MS} ms`);
        resolve();
      }, HELD_WAIT_MS);
      timer.unref();
    });
    await Promise.race([waited, timeout]);
    clearTimeout(timer);
  }

  /**
   * While Redis is away: usage from PostgreSQL plus the reservations under way here, one check at a time per
   * account so that concurrent ones see each other. Other instances' acceptances under way are not seen.
   */
  private reserveFromDatabase(accountId: string, rules: QuotaRule[], nowMs: number): Promise<QuotaReservation> {
    if (this.redisDown) this.checkedWithoutRedis.add(accountId);
    const previous = this.databaseTurns.get(accountId) ?? Promise.resolve();
    const turn = previous.then(async () => {
      const pending = this.pendingOf(accountId);
      const usage = await this.usage.windows(accountId, nowMs);
      const used = rules.map((rule) => usedIn(usage, rule.quota.unit, rule.quota.window) + (pending.get(rule.key) ?? 0));
      if (!fits(rules, used)) throw refusal(rules, used, nowMs);
      return this.hold(accountId, rules, false);
    });
    const settled = turn.then(
      () => undefined,
      () => undefined,
    );
    this.databaseTurns.set(accountId, settled);
    void settled.then(() => {
      if (this.databaseTurns.get(accountId) === settled) this.databaseTurns.delete(accountId);
    });
    return turn;
  }

  /** What the account's reservations under way add to each counter. */
  private pendingOf(accountId: string): Map<string, number> {
    const pending = new Map<string, number>();
    for (const h of this.held.get(accountId) ?? []) {
      if (h.done) continue;
      for (const rule of h.rules) pending.set(rule.key, (pending.get(rule.key) ?? 0) + rule.cost);
    }
    return pending;
  }

  private hold(accountId: string, rules: readonly QuotaRule[], inRedis: boolean): QuotaReservation {
    const held: Held = { rules, inRedis, done: false, waiters: null };
    let set = this.held.get(accountId);
    if (!set) this.held.set(accountId, (set = new Set()));
    set.add(held);
    const settle = () => {
      held.done = true;
      set.delete(held);
      if (set.size === 0 && this.held.get(accountId) === set) this.held.delete(accountId);
      held.waiters?.forEach((resolve) => resolve());
    };
    return {
      committed: () => {
        if (!held.done) settle();
      },
      release: async () => {
        if (held.done) return;
        // Given back before it settles: a load waiting for it must not read the counter with it still added.
        if (inRedis) await this.adjust(accountId, rules, -1);
        settle();
      },
    };
  }

  /** Adds (sign 1) or gives back (-1) the rules' costs to the counters that exist; Redis away: they are dropped when it is back. */
  private async adjust(accountId: string, rules: readonly QuotaRule[], sign: 1 | -1): Promise<void> {
    if (!this.redisDown) {
      try {
        await this.store.adjust(
          rules.map((rule) => rule.key),
          rules.map((rule) => sign * rule.cost),
        );
        return;
      } catch (err) {
        this.redisGone(err as Error);
      }
    }
    this.checkedWithoutRedis.add(accountId);
  }

  private async redisCall<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (err) {
      throw new RedisUnreachable(err as Error);
    }
  }

  /**
   * While Redis is away, one check at a time finds out whether it is back, after dropping the counters of the
   * accounts checked against PostgreSQL meanwhile (they miss what was accepted then), which then load again.
   */
  private async redisIsBack(): Promise<boolean> {
    if (Date.now() < this.retryRedisAt) return false;
    this.retryRedisAt = Date.now() + REDIS_RETRY_MS;
    const accounts = [...this.checkedWithoutRedis];
    const nowMs = Date.now();
    try {
      await this.store.drop(accounts.flatMap((accountId) => allCounterKeys(this.redisKey, accountId, nowMs)));
    } catch {
      return false;
    }
    accounts.forEach((accountId) => this.checkedWithoutRedis.delete(accountId));
    this.redisDown = false;
    this.logger.log('Quotas reach Redis again: counters rule again');
    return true;
  }

  private redisGone(err: Error): void {
    this.retryRedisAt = Date.now() + REDIS_RETRY_MS;
    if (this.redisDown) return;
    this.redisDown = true;
    this.logger.error(`Quotas cannot reach Redis (${err.message}): checking against PostgreSQL until they can`);
  }
}

/** The 429 of the quota that refuses (D-10, D-12), with Retry-After: seconds to the reset of its window. */
function refusal(rules: readonly QuotaRule[], used: readonly number[], nowMs: number): AppException {
  const refusing = refusingRule(rules, used);
  if (!refusing) throw new Error('refusal() called for an acceptance that fits');
  const { code, message, details, retryAfterSec } = refusalOf(refusing.rule, refusing.used, nowMs);
  const retryAfter = String(retryAfterSec);
  return new AppException(code, message, details, { 'Retry-After': retryAfter, 'X-RateLimit-RetryAfter': retryAfter });
}
