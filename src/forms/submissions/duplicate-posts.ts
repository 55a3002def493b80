import { createHash } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';
import { RedisService } from '../../redis/redis.service';
import { withRedisTimeout } from '../../redis/redis-timeout';
import type { SubmittedFields } from '../form-submission.entity';

/**
 * Identical posts within this window are stored once: a double click, a browser's or a proxy's retry. Short, because
 * people behind one address (an office, a carrier's NAT) may send the same short post (a vote, "yes").
 */
export const DUPLICATE_WINDOW_MS = 2 * 60 * 1000;
/** Redis gets this long to answer before the post is stored unchecked. */
const CHECK_TIMEOUT_MS = 500;

/** What makes two posts the same: the form, the client, the fields as posted and the files' names and bytes. */
export interface PostFingerprint {
  formId: string;
  ip: string | null;
  fields: SubmittedFields;
  files: { field: string; filename: string; hash: string }[];
}

/**
 * The first post's id when this one repeats a stored one; otherwise this post's claim: confirmed once the post is
 * stored, given back if it is not.
 */
export interface DuplicateCheck {
  firstId: string | null;
  confirm(): Promise<void>;
  giveBack(): Promise<void>;
}

/**
 * Answers the first post's id once that post is stored. A post still being accepted holds the key as `pending:<id>`:
 * a repeat meanwhile is stored too (the first may yet fail, and its answer would then name nothing), so a double
 * click in those milliseconds makes two submissions rather than none.
 */
const CLAIM_SCRIPT = `local first = redis.call('GET', KEYS[1])
if first then
  if string.sub(first, 1, 8) == 'pending:' then return false end
  return first
end
redis.call('SET', KEYS[1], 'pending:' .. ARGV[1], 'PX', ARGV[2])
return false`;
const CONFIRM_SCRIPT = `if redis.call('GET', KEYS[1]) == 'pending:' .. ARGV[1] then return redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) end return 0`;
const GIVE_BACK_SCRIPT = `if redis.call('GET', KEYS[1]) == 'pending:' .. ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;

const UNCHECKED: DuplicateCheck = { firstId: null, confirm: () => Promise.resolve(), giveBack: () => Promise.resolve() };

export function fingerprintKey(post: PostFingerprint): string {
  return createHash('sha256')
    .update(JSON.stringify([post.formId, post.ip, post.fields, post.files.map((f) => [f.field, f.filename, f.hash])]))
    .digest('hex');
}

/**
 * Identical posts to a form from one client within DUPLICATE_WINDOW_MS are stored (and mailed) once: the repeats are
 * answered with the first one's id. Without Redis (down, or slow to answer) every post is stored: a duplicate is the
 * lesser harm than a lost submission.
 */
@Injectable()
export class DuplicatePosts {
  private readonly logger = new Logger(DuplicatePosts.name);

  constructor(private readonly redis: RedisService) {}

  async check(post: PostFingerprint, submissionId: string): Promise<DuplicateCheck> {
    const key = this.redis.key('forms', 'post', fingerprintKey(post));
    let first: unknown;
    try {
      first = await withRedisTimeout(this.redis.client.eval(CLAIM_SCRIPT, 1, key, submissionId, DUPLICATE_WINDOW_MS), CHECK_TIMEOUT_MS);
    } catch (err) {
      this.logger.warn(`Submission stored without the duplicate check: ${(err as Error).message}`);
      return UNCHECKED;
    }
    if (typeof first === 'string') return { ...UNCHECKED, firstId: first };
    const run = (script: string, what: string, ...args: (string | number)[]) =>
      this.redis.client
        .eval(script, 1, key, submissionId, ...args)
        .then(() => undefined)
        .catch((err: Error) => this.logger.warn(`Duplicate check not ${what}: ${err.message}`));
    return {
      firstId: null,
      confirm: () => run(CONFIRM_SCRIPT, 'confirmed', DUPLICATE_WINDOW_MS),
      giveBack: () => run(GIVE_BACK_SCRIPT, 'given back'),
    };
  }
}
