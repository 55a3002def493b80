import { createHash } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';
import { RedisService } from '../../redis/redis.service';
import { withRedisTimeout } from '../../redis/redis-timeout';
import type { SubmittedFields } from '../form-submission.entity';

/** Identical posts within this window are stored once: a double click, a browser's or a proxy's retry. */
export const DUPLICATE_WINDOW_MS = 10 * 60 * 1000;
/** Redis gets this long to answer before the post is stored unchecked. */
const CHECK_TIMEOUT_MS = 500;

/** What makes two posts the same: the form, the client, the fields as posted and the files' names and bytes. */
export interface PostFingerprint {
  formId: string;
  ip: string | null;
  fields: SubmittedFields;
  files: { field: string; filename: string; hash: string }[];
}

/** The first post's id when this one repeats it; otherwise this post's claim, given back if it is not stored. */
export interface DuplicateCheck {
  firstId: string | null;
  giveBack(): Promise<void>;
}

/** Takes the key for this post's id unless a post took it already; answers the first id then (nil when claimed). */
const CLAIM_SCRIPT = `local first = redis.call('GET', KEYS[1])
if first then return first end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return false`;
const GIVE_BACK_SCRIPT = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;

const FIRST: DuplicateCheck = { firstId: null, giveBack: () => Promise.resolve() };

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
      return FIRST;
    }
    if (typeof first === 'string') return { firstId: first, giveBack: () => Promise.resolve() };
    return {
      firstId: null,
      giveBack: () =>
        this.redis.client
          .eval(GIVE_BACK_SCRIPT, 1, key, submissionId)
          .then(() => undefined)
          .catch((err: Error) => this.logger.warn(`Duplicate check not given back: ${err.message}`)),
    };
  }
}
