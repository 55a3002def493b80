import { Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { AppConfigService } from '../config/app-config.service';

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
 * it is made, and delivery and the sweeper call it through here. A process that delivers will not start without one.
 */
@Injectable()
export class ForwardFailureReports implements ForwardFailureReporter, OnApplicationBootstrap {
  private reporter: ForwardFailureReporter | null = null;

  constructor(private readonly config: AppConfigService) {}

  register(reporter: ForwardFailureReporter): void {
    if (this.reporter) throw new Error('A reporter of forwarded mail that failed is registered already');
    this.reporter = reporter;
  }

  onApplicationBootstrap(): void {
    if (this.config.runsWorkers && !this.reporter) throw new Error('Delivery runs here, but nothing reports forwarded mail that failed');
  }

  report(messageId: string): Promise<void> {
    return this.reporter ? this.reporter.report(messageId) : Promise.resolve();
  }

  sweep(olderThan: Date): Promise<number> {
    return this.reporter ? this.reporter.sweep(olderThan) : Promise.resolve(0);
  }
}
