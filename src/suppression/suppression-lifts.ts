import { Injectable, Logger } from '@nestjs/common';

/** What is told that an address left an account's suppression list: forms, which retry the notifications it held. */
export interface SuppressionLiftListener {
  /** Acts on the lifted address; may reject (the lift stands, the rejection is logged). */
  lifted(accountId: string, email: string): Promise<void>;
}

/**
 * The suppression list is below the features that hold mail back for it, so they register here to learn that an
 * address was taken off (as forwarding registers with email's ForwardFailureReports). Telling is best effort: a
 * listener must also find, by its own sweep, what a lift it missed (a process that died) left waiting.
 */
@Injectable()
export class SuppressionLifts {
  private readonly logger = new Logger(SuppressionLifts.name);
  private readonly listeners: SuppressionLiftListener[] = [];

  register(listener: SuppressionLiftListener): void {
    this.listeners.push(listener);
  }

  /** Tells every listener, without waiting for them. */
  lifted(accountId: string, email: string): void {
    for (const listener of this.listeners) {
      listener.lifted(accountId, email).catch((err: Error) => this.logger.warn(`After ${email} left the suppression list: ${err.message}`));
    }
  }
}
