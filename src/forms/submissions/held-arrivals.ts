import { Injectable, Logger } from '@nestjs/common';

/** What is told that a submission was stored `held` (its instant form unconfirmed when the post read it). */
export interface HeldArrivalListener {
  /** Acts on the form's new held submission; may reject (the post stands, the rejection is logged). */
  held(formId: string): Promise<void>;
}

/**
 * The pipeline is below the instant forms that release held submissions, so they register here to learn that one
 * was stored: a post that read its form unconfirmed just before the confirmation committed must not wait for another
 * click. Telling is best effort: the listener's own sweep finds what a dead process left held.
 */
@Injectable()
export class HeldArrivals {
  private readonly logger = new Logger(HeldArrivals.name);
  private readonly listeners: HeldArrivalListener[] = [];

  register(listener: HeldArrivalListener): void {
    this.listeners.push(listener);
  }

  /** Tells every listener, without waiting for them. */
  stored(formId: string): void {
    for (const listener of this.listeners) {
      listener.held(formId).catch((err: Error) => this.logger.warn(`After a held submission to form ${formId}: ${err.message}`));
    }
  }
}
