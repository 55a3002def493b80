import type { Form } from '../form.entity';

/** What the confirmation link shows (GET) and what its button did (POST). */
export type ConfirmationView =
  | { state: 'unknown' }
  | { state: 'pending'; form: Form; held: number }
  | { state: 'already'; form: Form }
  | {
      state: 'confirmed';
      form: Form;
      /** Submissions held when this confirmation released them. */
      held: number;
      /** Of those, how many were committed to go out before the answer (the first page; any whose mail failed not counted). */
      sentNow: number;
      /** The account's email quota refused some of the others: they wait for it (the sweep sends them once it has room). */
      waitingForQuota: boolean;
      /** When that quota has room again, if it said. */
      quotaResetAt: Date | null;
    };

/** What a confirmation (POST) answers. */
export type ConfirmationOutcome = Exclude<ConfirmationView, { state: 'pending' }>;

/** The held submissions a confirmation had not sent when it answered (a post may have been held after it counted). */
export function pendingOf(view: Extract<ConfirmationView, { state: 'confirmed' }>): number {
  return Math.max(view.held - view.sentNow, 0);
}
