import { plainToInstance } from 'class-transformer';
import { validateSync, ValidationError } from 'class-validator';
import { AppException } from '../common/errors/app.exception';
import { InvalidSubscriberDto, MAX_SUBSCRIBERS_PER_CALL, SubscriberInputDto } from './dto/subscriber.dto';

/** A valid entry, the address lower-cased; `name` undefined when the entry gave none. */
export interface SubscriberEntry {
  email: string;
  name?: string;
}

/**
 * The entries of an add call, whose body is the spec's array `[{email, name}]` or `{subscribers: [...]}`. The
 * shape of the call is all or nothing (400); the entries are checked one by one by checkSubscribers.
 */
export function subscriberEntries(body: unknown): unknown[] {
  let entries: unknown = body;
  if (!Array.isArray(body)) {
    if (body === null || typeof body !== 'object') {
      throw AppException.invalidField('subscribers', 'the body must be an array of {email, name} or {"subscribers": [...]}');
    }
    const unknown = Object.keys(body).filter((key) => key !== 'subscribers');
    if (unknown.length) throw AppException.validation(unknown.map((field) => ({ field, message: `property ${field} should not exist` })));
    entries = (body as { subscribers?: unknown }).subscribers;
  }
  if (!Array.isArray(entries)) throw AppException.invalidField('subscribers', 'must be an array of {email, name}');
  if (entries.length === 0) throw AppException.invalidField('subscribers', 'at least one subscriber is required');
  if (entries.length > MAX_SUBSCRIBERS_PER_CALL) {
    throw AppException.invalidField('subscribers', `at most ${MAX_SUBSCRIBERS_PER_CALL} subscribers per call; got ${entries.length}`);
  }
  return entries;
}

/**
 * Splits entries into valid ones, deduplicated case-insensitively (an address keeps its first place and the
 * last name given for it), and invalid ones reported by index. `repeats` counts the entries folded into an
 * earlier one.
 */
export function checkSubscribers(entries: unknown[]): { valid: SubscriberEntry[]; invalid: InvalidSubscriberDto[]; repeats: number } {
  const byEmail = new Map<string, SubscriberEntry>();
  const invalid: InvalidSubscriberDto[] = [];
  let repeats = 0;
  entries.forEach((entry, index) => {
    const at = `subscribers[${index}]`;
    if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) {
      invalid.push({ index, field: at, message: 'must be an object with email and name' });
      return;
    }
    const input = plainToInstance(SubscriberInputDto, entry);
    const errors = validateSync(input, { whitelist: true, forbidNonWhitelisted: true, stopAtFirstError: true });
    if (errors.length) {
      invalid.push(...errors.map((error) => ({ index, field: `${at}.${error.property}`, message: firstMessage(error) })));
      return;
    }
    const email = input.email.toLowerCase();
    // Lower-casing can lengthen some letters (İ → i̇): the stored address must still fit.
    if (email.length > 320) {
      invalid.push({ index, field: `${at}.email`, message: 'email must be shorter than or equal to 320 characters' });
      return;
    }
    const earlier = byEmail.get(email);
    if (earlier) {
      repeats++;
      if (input.name !== undefined) earlier.name = input.name;
    } else {
      byEmail.set(email, { email, ...(input.name !== undefined ? { name: input.name } : {}) });
    }
  });
  return { valid: [...byEmail.values()], invalid, repeats };
}

function firstMessage(error: ValidationError): string {
  return Object.values(error.constraints ?? {})[0] ?? 'is not valid';
}
