import { Injectable } from '@nestjs/common';

/** What tells the senders of forwarded mail about its failed destinations: forwarding's DsnService. */
export interface ForwardFailureReporter {
  /** Reports the message's unreported failures, if any; never rejects. */
  report(messageId: string): Promise<void>;
  /** Reports the failures recorded before `olderThan` still unreported (a dead process's); how many messages. */
  sweep(olderThan: Date): Promise<number>;
}

/**
 * Delivery records the destinations of forwarded mail that will not get it (forward-failures.ts) with the move that
 * says so; telling their senders is forwarding's, which stands on this module. So the reporter registers here when
 * it is made, and delivery and the sweeper call it through here. Without one the failures stay recorded, unreported.
 */
@Injectable()
export class ForwardFailureReports implements ForwardFailureReporter {
  private reporter: ForwardFailureReporter | null = null;

  register(reporter: ForwardFailureReporter): void {
    this.reporter = reporter;
  }

  report(messageId: string): Promise<void> {
    return this.reporter ? this.reporter.report(messageId) : Promise.resolve();
  }

  sweep(olderThan: Date): Promise<number> {
    return this.reporter ? this.reporter.sweep(olderThan) : Promise.resolve(0);
  }
}
