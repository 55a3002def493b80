import type { Form } from '../form.entity';

/** What the confirmation link shows (GET) and what its button did (POST). */
export type ConfirmationView =
  | { state: 'unknown' }
  | { state: 'pending'; form: Form; held: number }
  | { state: 'already'; form: Form }
  | {
      state: 'confirmed';
      form: Form;
      /** Held submissions this confirmation releases. */
      held: number;
      /** Of those, how many wait for the account's email quota (sent by the sweep once it has room). */
      waiting: number;
      /** When that quota has room again. */
      waitingUntil: Date | null;
    };

/** What a confirmation (POST) answers. */
export type ConfirmationOutcome = Exclude<ConfirmationView, { state: 'pending' }>;
