import type { Domain } from '../domains/domain.entity';
import type { RuleMatch } from './forwarding-rules';

/** Where mail for one envelope recipient goes, decided at its RCPT TO. */
export type InboundRoute =
  /** An address of a forwarding domain with a matching rule. */
  | ({ kind: 'forward'; address: string; domain: Domain } & RuleMatch)
  /** An SRS address of a forwarding domain: a bounce of mail forwarded from here, back to its sender. */
  | { kind: 'returned'; address: string; domain: Domain; sender: string }
  /** The VERP return path of a message sent from here: a bounce or complaint about it. */
  | { kind: 'report'; address: string; messageId: string };

/** One SMTP transaction, taken whole (DATA). */
export interface ReceivedTransaction {
  /** MAIL FROM as given; '' for a bounce (`<>`). */
  mailFrom: string;
  routes: InboundRoute[];
  /** The message as received. */
  source: Buffer;
  clientAddress: string;
  clientHostname?: string;
  helo: string;
  secure: boolean;
}
