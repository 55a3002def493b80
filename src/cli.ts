import 'reflect-metadata';
import { writeFile } from 'node:fs/promises';
import { Command, CommanderError, Option } from 'commander';
import { stringify } from 'yaml';
import { readConfigFile } from './cli/config-file-reader';
import { ApiError, MailroomClient, type PushResult } from './cli/mailroom-client';
import { formatApiError, formatPlan, paintFor } from './cli/plan-output';

/** Exit codes a CI pipeline can branch on. */
export const EXIT = { ok: 0, error: 1, changesPending: 2 } as const;

interface ApiOptions {
  url: string;
  apiKey?: string;
}

/** The options of `push` and `plan`, as commander parses them. */
type PushOptions = ApiOptions & { dryRun?: boolean; prune?: boolean; json?: boolean };

function client(options: ApiOptions): MailroomClient {
  if (!options.apiKey) throw new Error('No API key: pass --api-key or set MAILROOM_API_KEY to an admin key');
  return new MailroomClient(options.url, options.apiKey);
}

/** Pushes (or plans) a file and prints the plan; the exit code says whether changes are pending. */
async function push(path: string, options: PushOptions): Promise<number> {
  const file = await readConfigFile(path, process.env);
  const dryRun = options.dryRun === true;
  const result: PushResult = await client(options).pushConfig(file, { dryRun, prune: options.prune === true });
  console.log(options.json ? JSON.stringify(result, null, 2) : formatPlan(result, paintFor(process.stdout)));
  return dryRun && result.changes.length > 0 ? EXIT.changesPending : EXIT.ok;
}

function program(setExit: (code: number) => void): Command {
  const apiOptions = (command: Command) =>
    command
      .addOption(new Option('--url <url>', 'base URL of the Mailroom API').env('MAILROOM_URL').default('http://localhost:3000'))
      .addOption(new Option('--api-key <key>', 'an admin API key of the account').env('MAILROOM_API_KEY'));
  const run =
    <A extends unknown[]>(action: (...args: A) => Promise<number>) =>
    async (...args: A) =>
      setExit(await action(...args));

  const cli = new Command('mailroom')
    .description('Mailroom command line: keep an account’s configuration in a file and push it; the operator’s database tasks.')
    .showHelpAfterError()
    .exitOverride();

  apiOptions(cli.command('push').argument('<file>', 'configuration file, YAML or JSON'))
    .description(
      'Apply the file to the account (one transaction); what it does not name is kept unless --prune. A secret written ' +
        'as ${NAME} (captcha_secret) is read from the environment variable NAME',
    )
    .option('--dry-run', 'show the plan without applying it (exit code 2 when there are changes)')
    .option('--prune', 'delete what the file does not name')
    .option('--json', 'print the result as JSON')
    .action(run((file: string, options: PushOptions) => push(file, options)));

  apiOptions(cli.command('plan').argument('<file>', 'configuration file, YAML or JSON'))
    .description('Show what a push would change; exit code 2 when there are changes, 0 when none')
    .option('--prune', 'plan the deletion of what the file does not name')
    .option('--json', 'print the plan as JSON')
    .action(run((file: string, options: PushOptions) => push(file, { ...options, dryRun: true })));

  apiOptions(cli.command('export'))
    .description('Print the account’s configuration as a file (YAML, or JSON with --format json)')
    .addOption(new Option('--format <format>', 'output format').choices(['yaml', 'json']).default('yaml'))
    .option('-o, --output <file>', 'write to this file instead of standard output')
    .action(
      run(async (options: ApiOptions & { format: 'yaml' | 'json'; output?: string }) => {
        const config = await client(options).exportConfig();
        const text = options.format === 'json' ? `${JSON.stringify(config, null, 2)}\n` : stringify(config, { lineWidth: 0 });
        if (options.output) await writeFile(options.output, text);
        else process.stdout.write(text);
        return EXIT.ok;
      }),
    );

  cli
    .command('bootstrap')
    .description(
      'Create the operator account if there is none and print a new operator admin key (shown once). Uses DATABASE_URL, not the API.',
    )
    .action(
      run(async () => {
        const { bootstrapOperator } = await import('./cli/bootstrap');
        const key = await bootstrapOperator();
        console.error('Operator admin key (shown once; store it safely):');
        console.log(key);
        return EXIT.ok;
      }),
    );

  cli
    .command('migrate')
    .description(
      'Create the database if missing and apply pending migrations, as a process does at start (for MIGRATIONS_RUN=false). ' +
        'Safe beside starting processes. Uses DATABASE_URL, not the API.',
    )
    .action(
      run(async () => {
        const { migrate } = await import('./cli/migrate');
        const applied = await migrate();
        console.log(applied.length ? `Applied ${applied.length} migration(s):\n${applied.join('\n')}` : 'No migrations to apply.');
        return EXIT.ok;
      }),
    );

  cli
    .command('reseal-secrets')
    .description(
      'After changing ENCRYPTION_KEY (the old key in ENCRYPTION_KEY_PREVIOUS): seal every stored secret (DKIM keys, ' +
        'webhook secrets, forms’ CAPTCHA secrets, the inbound server’s TLS key) under ENCRYPTION_KEY, in one transaction. Safe to run again. Uses ' +
        'DATABASE_URL, not the API.',
    )
    .option('--dry-run', 'count what would be re-sealed without changing anything')
    .action(
      run(async (options: { dryRun?: boolean }) => {
        const { resealSecrets } = await import('./cli/reseal-secrets');
        console.log(await resealSecrets({ dryRun: options.dryRun === true }));
        return EXIT.ok;
      }),
    );
  return cli;
}

async function main(argv: string[]): Promise<number> {
  let code: number = EXIT.ok;
  const cli = program((exit) => (code = exit));
  const paint = paintFor(process.stderr);
  try {
    await cli.parseAsync(argv);
    return code;
  } catch (err) {
    if (err instanceof ApiError) console.error(formatApiError(err, paint));
    else if (err instanceof CommanderError) {
      // commander printed its own message (usage, --help)
      return err.exitCode === 0 ? EXIT.ok : EXIT.error;
    } else console.error(paint('red', err instanceof Error ? err.message : String(err)));
    return EXIT.error;
  }
}

void main(process.argv).then((code) => process.exit(code));
