import { Pool } from 'pg';
import { SMTPServer } from 'smtp-server';

/**
 * The baselines of the inbound-forwarding scenario, run as their own process (as Mailroom runs in its own, so the
 * client pool in the bench process competes with neither): a bare smtp-server on `BARE_SMTP_PORT` that takes
 * every recipient and answers 250 at the end of DATA. With `BARE_DATABASE_URL` it first writes the message with
 * one INSERT into `BARE_TABLE` (one commit per message: the naive durable server); without, it writes nothing
 * (the upper bound of any server on smtp-server).
 */
function main(): void {
  const table = process.env.BARE_TABLE ?? 'bare_inbound_messages';
  const pool = process.env.BARE_DATABASE_URL
    ? new Pool({ connectionString: process.env.BARE_DATABASE_URL, max: Number(process.env.BARE_POOL_SIZE ?? 10) })
    : null;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    disableReverseLookup: true,
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        if (!pool) return callback(null, 'Ok');
        pool
          .query(`INSERT INTO ${table} (mail_from, recipients, source) VALUES ($1, $2, $3)`, [
            session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
            session.envelope.rcptTo.map((r) => r.address),
            Buffer.concat(chunks),
          ])
          .then(
            () => callback(null, 'Ok: stored'),
            (err: Error) => callback(Object.assign(new Error(`4.3.0 ${err.message}`), { responseCode: 451 })),
          );
      });
    },
  });
  server.listen(Number(process.env.BARE_SMTP_PORT), '127.0.0.1');
}

main();
