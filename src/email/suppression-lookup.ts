import { Injectable } from '@nestjs/common';
import { SuppressionService } from '../suppression/suppression.service';

interface Waiting {
  emails: string[];
  resolve: (suppressed: Set<string>) => void;
  reject: (err: unknown) => void;
}

/**
 * The send path's suppression check (D-19), batched: the checks of concurrent sends of one account go to
 * the database as one query. Answers lower-cased addresses, like SuppressionService.suppressedAmong.
 */
@Injectable()
export class SuppressionLookup {
  private waiting = new Map<string, Waiting[]>();
  private scheduled = false;

  constructor(private readonly suppression: SuppressionService) {}

  suppressedAmong(accountId: string, emails: string[]): Promise<Set<string>> {
    return new Promise((resolve, reject) => {
      const list = this.waiting.get(accountId);
      if (list) list.push({ emails, resolve, reject });
      else this.waiting.set(accountId, [{ emails, resolve, reject }]);
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    const batches = this.waiting;
    this.waiting = new Map();
    for (const [accountId, callers] of batches) {
      this.suppression.suppressedAmong(accountId, [...new Set(callers.flatMap((c) => c.emails))]).then(
        (suppressed) => callers.forEach((c) => c.resolve(new Set(c.emails.map((e) => e.toLowerCase()).filter((e) => suppressed.has(e))))),
        (err) => callers.forEach((c) => c.reject(err)),
      );
    }
  }
}
