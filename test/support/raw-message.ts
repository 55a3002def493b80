/** A plain-text message as a client writes it (CRLF line ends), from sender@origin.test, its Message-ID made from the subject. */
export function rawMessage(to: string, subject: string, options: { headers?: string[]; body?: string } = {}): Buffer {
  return Buffer.from(
    [
      'From: Sender <sender@origin.test>',
      `To: ${to}`,
      `Subject: ${subject}`,
      `Message-ID: <${subject.replace(/\W/g, '')}@origin.test>`,
      'Date: Mon, 23 Nov 2026 10:00:00 +0000',
      'MIME-Version: 1.0',
      'Content-Type: text/plain; charset=utf-8',
      ...(options.headers ?? []),
      '',
      options.body ?? 'Hello there.\r\nSecond line.\r\n',
    ].join('\r\n'),
  );
}
