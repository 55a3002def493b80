import { matchRule, splitAddress } from '../forwarding-rules';
import { headerFields, headerSection } from '../received-message';
import { SenderRewriting } from '../sender-rewriting';
import type { FailedRecipient } from './dsn-message';

/** What a notification about a forwarded message is made from: the message received and the forward. */
export interface DsnSubject {
  accountId: string;
  /** The envelope sender of the message received; '' for a bounce (MAIL FROM:<>). */
  sender: string;
  /** `sender` passed SPF, or DKIM aligned with it, when the message was received (a forged one is never notified). */
  senderAuthenticated: boolean;
  /** The addresses of the forwarding domain it was received for (RCPT TO), as given. */
  aliases: readonly string[];
  /** The domain's forwarding rules now (null when the domain is gone). */
  rules: Readonly<Record<string, string[]>> | null | undefined;
  arrivedAt: Date;
  /** The first bytes of the message received; null once retention cleared them. */
  head: Buffer | null;
  /** `head` is the whole message. */
  headIsWhole: boolean;
  subject: string;
  /** The forwarded message's Message-ID (the received one's, or one made for it). */
  messageId: string;
}

export interface OriginalHeaders {
  /** The header section, CRLF lines; null when no longer kept. */
  section: string | null;
  messageId: string | null;
}

/**
 * The headers of the message the notification is about; null when its sender is owed none: a null sender, a
 * MAILER-DAEMON, or a message a machine sent (Auto-Submitted other than `no`, RFC 3834) or a report itself
 * (multipart/report): a notification about any of these could answer a notification, and loop.
 */
export function notifiable(subject: DsnSubject): OriginalHeaders | null {
  if (subject.sender === '' || /^mailer-daemon@/i.test(subject.sender)) return null;
  if (!subject.head) return { section: null, messageId: null };
  const section = completeSection(subject.head, subject.headIsWhole);
  const fields = headerFields(section);
  const value = (name: string) => fields.find((f) => f.name.toLowerCase() === name)?.value.trim() ?? '';
  const autoSubmitted = value('auto-submitted').toLowerCase();
  if (autoSubmitted !== '' && !autoSubmitted.startsWith('no')) return null;
  if (/^multipart\/report\b/i.test(value('content-type'))) return null;
  const messageId = /<[^<>\s]+>/.exec(value('message-id'))?.[0] ?? null;
  return { section: `${section.split(/\r?\n/).join('\r\n')}\r\n`, messageId };
}

/**
 * The failures as the sender may read them: each under the address the sender wrote (the alias whose rule leads to
 * the destination; every address of the message when the rules changed since), never the destination itself, which is
 * the account's to keep private, also where the next hop's answer repeats it. An alias with several failed
 * destinations is reported once, with the first failure.
 */
export function failedAddresses(subject: DsnSubject, failures: readonly FailedRecipient[]): FailedRecipient[] {
  const aliases = subject.aliases.filter((address) => !SenderRewriting.isSrs(splitAddress(address)?.local ?? ''));
  const byAlias = new Map<string, FailedRecipient>();
  for (const failure of failures) {
    const destination = failure.recipient.toLowerCase();
    const leading = aliases.filter((alias) =>
      matchRule(subject.rules ?? undefined, splitAddress(alias)?.local ?? '')?.destinations.some((d) => d.toLowerCase() === destination),
    );
    const reportedAs = leading.length ? leading : aliases.length ? aliases : ['(unknown)'];
    for (const alias of reportedAs) {
      if (byAlias.has(alias.toLowerCase())) continue;
      byAlias.set(alias.toLowerCase(), { ...failure, recipient: alias, diagnostic: redact(failure.diagnostic, failure.recipient, alias) });
    }
  }
  return [...byAlias.values()];
}

/** The header section, cut at its last whole line when the bytes read end inside it. */
function completeSection(head: Buffer, whole: boolean): string {
  const section = headerSection(head);
  if (whole || section.length < head.length) return section;
  const lastLine = section.lastIndexOf('\n');
  return lastLine < 0 ? '' : section.slice(0, lastLine).replace(/\r$/, '');
}

function redact(text: string, destination: string, alias: string): string {
  return text.split(new RegExp(destination.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'gi')).join(alias);
}
