import { Injectable } from '@nestjs/common';
import { MicroBatch } from '../common/micro-batch';
import { SuppressionService } from '../suppression/suppression.service';

interface Check {
  accountId: string;
  emails: string[];
}

/**
 * The send path's suppression check (D-19), batched: the checks of concurrent sends of one account go to
 * the database as one query. Answers lower-cased addresses, like SuppressionService.suppressedAmong.
 */
@Injectable()
export class SuppressionLookup {
  private readonly checks = new MicroBatch<Check, Set<string>>((checks) => this.lookUp(checks), 500, 4);

  constructor(private readonly suppression: SuppressionService) {}

  suppressedAmong(accountId: string, emails: string[]): Promise<Set<string>> {
    return this.checks.submit({ accountId, emails });
  }

  private async lookUp(checks: Check[]): Promise<PromiseSettledResult<Set<string>>[]> {
    const accounts = [...new Set(checks.map((c) => c.accountId))];
    const answers = new Map(
      await Promise.all(
        accounts.map(async (accountId) => {
          const emails = [...new Set(checks.filter((c) => c.accountId === accountId).flatMap((c) => c.emails))];
          return [
            accountId,
            await this.suppression.suppressedAmong(accountId, emails).then(
              (suppressed) => ({ suppressed }),
              (error: unknown) => ({ error }),
            ),
          ] as const;
        }),
      ),
    );
    return checks.map((check): PromiseSettledResult<Set<string>> => {
      const answer = answers.get(check.accountId)!;
      if ('error' in answer) return { status: 'rejected', reason: answer.error };
      const own = check.emails.map((e) => e.toLowerCase()).filter((e) => answer.suppressed.has(e));
      return { status: 'fulfilled', value: new Set(own) };
    });
  }
}
