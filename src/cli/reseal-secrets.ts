import { DataSource, EntityManager } from 'typeorm';
import { CryptoModule } from '../common/crypto/crypto.module';
import { SecretBox, SecretBoxError } from '../common/crypto/secret-box';
import { Domain } from '../domains/domain.entity';
import { Form } from '../forms/form.entity';
import { InboundTlsCertificate } from '../forwarding/inbound-tls-certificate.entity';
import { Webhook } from '../webhooks/webhook.entity';
import { withDatabaseContext } from './database-context';

interface SealedColumn {
  /** What the values are, as the command's output names them: all of them, and one. */
  kind: string;
  one: string;
  entity: new () => object;
  property: string;
  /** The value's path inside the column, when the column is jsonb. */
  jsonPath?: readonly string[];
  /** Rows written before the values were sealed hold plain text: it is sealed (the rows are counted apart). */
  plainTextBefore?: boolean;
}

function sealed<T extends object>(
  kind: string,
  one: string,
  entity: new () => T,
  property: keyof T & string,
  options: Pick<SealedColumn, 'jsonPath' | 'plainTextBefore'> = {},
): SealedColumn {
  return { kind, one, entity, property, ...options };
}

/** Every column that holds a SecretBox value. A new sealed column belongs here, or a key rotation would lose it. */
export const SEALED_COLUMNS: readonly SealedColumn[] = [
  sealed('DKIM private keys', 'DKIM private key', Domain, 'dkimPrivateKey'),
  sealed('webhook secrets', 'webhook secret', Webhook, 'secret'),
  sealed('previous webhook secrets', 'previous webhook secret', Webhook, 'previousSecret'),
  sealed('CAPTCHA secrets', 'CAPTCHA secret', Form, 'settings', { jsonPath: ['spam_protection', 'captcha_secret'], plainTextBefore: true }),
  sealed('inbound TLS keys', 'inbound TLS key', InboundTlsCertificate, 'privateKey'),
];

export interface ResealCount {
  kind: string;
  /** Sealed under a previous key and re-sealed under ENCRYPTION_KEY (with --dry-run: would be). */
  resealed: number;
  /** Already sealed under ENCRYPTION_KEY: left as they are. */
  current: number;
  /** Plain text from before the values were sealed, sealed under ENCRYPTION_KEY now (with --dry-run: would be). */
  plainText: number;
}

/** Values no configured key opens: the run changes nothing and names where they are (ids only, never a key). */
export class UnreadableSecretsError extends Error {
  constructor(readonly places: string[]) {
    const shown = places.slice(0, 5).join(', ') + (places.length > 5 ? `, and ${places.length - 5} more` : '');
    super(
      `${places.length} sealed value${places.length === 1 ? '' : 's'} (${shown}) open${places.length === 1 ? 's' : ''} with neither ` +
        'ENCRYPTION_KEY nor any key in ENCRYPTION_KEY_PREVIOUS: add the key they were sealed with to ENCRYPTION_KEY_PREVIOUS ' +
        'and run again. Nothing was changed.',
    );
    this.name = 'UnreadableSecretsError';
  }
}

/**
 * Re-seals every sealed value under ENCRYPTION_KEY, in one transaction: each is opened with whichever configured key
 * fits and sealed again with the current one; values already under it are left alone, so a second run changes
 * nothing. The rows are locked first, so a webhook secret rotated meanwhile is neither lost nor left under an old key.
 * If any value opens with none of the keys, nothing is written (UnreadableSecretsError).
 */
export async function resealAll(dataSource: DataSource, box: SecretBox, options: { dryRun: boolean }): Promise<ResealCount[]> {
  return dataSource.transaction(async (manager) => {
    const unreadable: string[] = [];
    const work: { column: SealedColumn; updates: { id: string; value: string }[]; current: number; plainText: number }[] = [];
    for (const column of SEALED_COLUMNS) {
      const updates: { id: string; value: string }[] = [];
      let current = 0;
      let plainText = 0;
      for (const row of await sealedValues(manager, column)) {
        if (column.plainTextBefore && !SecretBox.isSealed(row.value)) {
          updates.push({ id: row.id, value: box.seal(row.value) });
          plainText++;
          continue;
        }
        try {
          const resealed = box.reseal(row.value);
          if (resealed === null) current++;
          else updates.push({ id: row.id, value: resealed });
        } catch (err) {
          if (!(err instanceof SecretBoxError)) throw err;
          unreadable.push(`${column.one} of ${row.id}`);
        }
      }
      work.push({ column, updates, current, plainText });
    }
    if (unreadable.length > 0) throw new UnreadableSecretsError(unreadable);
    if (!options.dryRun) for (const { column, updates } of work) await write(manager, column, updates);
    return work.map(({ column, updates, current, plainText }) => ({
      kind: column.kind,
      resealed: updates.length - plainText,
      current,
      plainText,
    }));
  });
}

/** The table, and the SQL of the value (a text) and of the column set to `$value` (a text parameter). */
function where(manager: EntityManager, column: SealedColumn): { table: string; value: string; set: (value: string) => string } {
  const metadata = manager.connection.getMetadata(column.entity);
  const name = metadata.findColumnWithPropertyName(column.property)?.databaseName;
  if (!name) throw new Error(`${metadata.name} has no column ${column.property}`);
  if (!column.jsonPath) return { table: metadata.tableName, value: `"${name}"`, set: (value) => `"${name}" = ${value}` };
  const path = `'{${column.jsonPath.join(',')}}'`;
  return {
    table: metadata.tableName,
    // Only strings: a value of another JSON type is no secret (the checks of the settings never store one).
    value: `(CASE WHEN jsonb_typeof("${name}" #> ${path}) = 'string' THEN "${name}" #>> ${path} END)`,
    set: (value) => `"${name}" = jsonb_set("${name}", ${path}, to_jsonb(${value}))`,
  };
}

async function sealedValues(manager: EntityManager, column: SealedColumn): Promise<{ id: string; value: string }[]> {
  const { table, value } = where(manager, column);
  return manager.query(`SELECT id, ${value} AS value FROM "${table}" WHERE ${value} IS NOT NULL ORDER BY id FOR UPDATE`);
}

/** One statement per column; updated_at is left alone: nothing the user set has changed. */
async function write(manager: EntityManager, column: SealedColumn, updates: { id: string; value: string }[]): Promise<void> {
  if (updates.length === 0) return;
  const { table, set } = where(manager, column);
  await manager.query(
    `UPDATE "${table}" AS t SET ${set('v.value')} FROM unnest($1::varchar[], $2::text[]) AS v(id, value) WHERE t.id = v.id`,
    [updates.map((u) => u.id), updates.map((u) => u.value)],
  );
}

/** The counts as the command prints them; with previous keys configured, how long to keep them. */
export function formatResealCounts(counts: ResealCount[], options: { dryRun: boolean; previousKeys: boolean }): string {
  const { dryRun } = options;
  const width = Math.max(...counts.map((c) => c.kind.length));
  const lines = counts.map(
    (c) =>
      `${`${c.kind}:`.padEnd(width + 1)} ${c.resealed} ${dryRun ? 'to re-seal' : 're-sealed'}, ${c.current} already under ENCRYPTION_KEY` +
      (c.plainText > 0 ? `, ${c.plainText} in plain text ${dryRun ? 'to seal' : 'sealed'}` : ''),
  );
  lines.push(dryRun ? 'Dry run: nothing was changed.' : 'Every sealed secret is now under ENCRYPTION_KEY.');
  if (!dryRun && options.previousKeys) {
    lines.push(
      'Keep ENCRYPTION_KEY_PREVIOUS set for at least 30 days after the new key was deployed: links, unsubscribe links and ' +
        'return paths in mail sent under the old key need it.',
    );
  }
  return lines.join('\n');
}

/**
 * `mailroom reseal-secrets`: after ENCRYPTION_KEY changed (the old key in ENCRYPTION_KEY_PREVIOUS), seals every
 * secret in the database under the new key, and seals CAPTCHA secrets still in plain text from before they were
 * sealed. Talks to the database directly (DATABASE_URL), like `bootstrap`.
 */
export function resealSecrets(options: { dryRun: boolean }): Promise<string> {
  return withDatabaseContext([CryptoModule], ['postgres'], async (app, config) => {
    const counts = await resealAll(app.get(DataSource), app.get(SecretBox), options);
    return formatResealCounts(counts, { dryRun: options.dryRun, previousKeys: config.previousEncryptionKeys.length > 0 });
  });
}
