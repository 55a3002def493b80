import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { readConfigFile } from '../../src/cli/config-file-reader';
import { type CliRun, runCli } from '../support/cli';
import { createAccount } from '../support/factories';
import { createTestApp, TestApp } from '../support/test-app';
import { databaseUrl, dropDatabase, shortRandom } from '../support/test-env';

const ROOT = join(__dirname, '../..');
const EXAMPLE = join(ROOT, 'examples/mailroom.yml');

const mailroom = runCli;

describe('mailroom command line (push, plan, export, bootstrap)', () => {
  let t: TestApp;
  let env: Record<string, string>;
  let dir: string;

  beforeAll(async () => {
    t = await createTestApp();
    const { adminKey } = await createAccount(t, 'CLI');
    const { port } = t.app.getHttpServer().address() as AddressInfo;
    env = { MAILROOM_URL: `http://127.0.0.1:${port}`, MAILROOM_API_KEY: adminKey };
    dir = await mkdtemp(join(tmpdir(), 'mailroom-cli-'));
  });
  afterAll(async () => {
    await t.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('plans with exit code 2, pushes with 0, then plans again with 0 and "No changes"', async () => {
    const plan = await mailroom(['plan', EXAMPLE], env);
    expect(plan).toMatchObject({ code: 2, stderr: '' });
    expect(plan.stdout).toMatch(/^\+ create\s+domains\.example\.com\.forms\.contact\s+form$/m);
    expect(plan.stdout).toMatch(/^\s+to: "team@example\.com"$/m);
    // The file's one project is one line.
    expect(plan.stdout.split('\n').filter((line) => /^\+ create\s+\S+\s+project$/.test(line))).toEqual([
      expect.stringMatching(/^\+ create\s+projects\.acme\s+project$/),
    ]);
    expect(plan.stdout).toContain('Plan: 12 to create, 0 to update, 0 to delete.');

    const push = await mailroom(['push', EXAMPLE], env);
    expect(push.code).toBe(0);
    expect(push.stdout).toContain('Applied: 12 to create, 0 to update, 0 to delete.');

    const again = await mailroom(['plan', EXAMPLE], env);
    expect(again).toMatchObject({ code: 0, stdout: 'No changes: the account matches the file.\n' });
  });

  it('exports the account as YAML that equals the pushed file (html_file read in)', async () => {
    const exported = await mailroom(['export'], env);
    expect(exported.code).toBe(0);
    expect(parse(exported.stdout)).toEqual(await readConfigFile(EXAMPLE));

    const output = join(dir, 'exported.json');
    expect((await mailroom(['export', '--format', 'json', '-o', output], env)).code).toBe(0);
    expect((await mailroom(['push', output, '--dry-run'], env)).code).toBe(0);
  });

  it('exports an account of several projects as YAML that plans no change when pushed back', async () => {
    const { adminKey } = await createAccount(t, 'CLI projects');
    const own = { ...env, MAILROOM_API_KEY: adminKey };
    const file = join(dir, 'projects.yml');
    await writeFile(
      file,
      [
        'project: { name: Main site, slug: main }',
        'projects:',
        '  shop: Shop',
        '  blog: { name: Blog }',
        'collections:',
        '  home: { forms: { signup: { to: team@example.org } } }',
        '  checkout: { project: shop }',
        '  posts: { project: blog }',
        '  misc: { project: null }',
        '',
      ].join('\n'),
    );
    expect((await mailroom(['push', file], own)).stdout).toContain('Applied: 8 to create, 0 to update, 0 to delete.');

    const exported = await mailroom(['export'], own);
    expect(exported.code).toBe(0);
    expect(parse(exported.stdout)).toEqual({
      project: { name: 'Main site', slug: 'main' },
      projects: { shop: { name: 'Shop' }, blog: { name: 'Blog' } },
      collections: {
        checkout: { name: 'checkout', project: 'shop' },
        home: { name: 'home', forms: { signup: { to: 'team@example.org' } } },
        misc: { name: 'misc', project: null },
        posts: { name: 'posts', project: 'blog' },
      },
    });
    const output = join(dir, 'projects-exported.yml');
    await writeFile(output, exported.stdout);
    expect(await mailroom(['plan', output, '--prune'], own)).toMatchObject({
      code: 0,
      stdout: 'No changes: the account matches the file.\n',
    });
  });

  it('shows a change in colour with its field before and after, and exits 2 in dry-run mode', async () => {
    const file = join(dir, 'changed.yml');
    await writeFile(file, 'domains:\n  example.com:\n    forwarding:\n      info: [someone@example.net]\n');
    const run = await mailroom(['push', file, '--dry-run', '--url', env.MAILROOM_URL], {
      MAILROOM_API_KEY: env.MAILROOM_API_KEY,
      NO_COLOR: undefined,
      FORCE_COLOR: '1',
    });
    expect(run.code).toBe(2);
    expect(run.stdout).toContain('\u001b[33m~ update\u001b[39m');
    expect(run.stdout).toContain('["owner@example.org"] → ["someone@example.net"]');
    expect(run.stdout).toContain('--prune deletes them');
  });

  it('exits 1 naming every problem of an invalid file by its path, and when it cannot run at all', async () => {
    const file = join(dir, 'invalid.yml');
    await writeFile(
      file,
      'domains:\n  example.com:\n    forms:\n      contact: { to: nobody }\nsettings: { global_limits: { hourly: 0 } }\n',
    );
    const invalid = await mailroom(['push', file], env);
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toContain('Error 400 VALIDATION_FAILED');
    expect(invalid.stderr).toContain('domains.example.com.forms.contact.to: not an email address: nobody');
    expect(invalid.stderr).toContain('settings.global_limits.hourly: must be a whole number');

    const broken = join(dir, 'broken.yml');
    await writeFile(broken, 'domains: [\n');
    expect(await mailroom(['plan', broken], env)).toMatchObject({ code: 1, stderr: expect.stringContaining('is not valid YAML or JSON') });
    expect(await mailroom(['plan', join(dir, 'missing.yml')], env)).toMatchObject({
      code: 1,
      stderr: expect.stringContaining('no such file'),
    });
    expect(await mailroom(['plan', EXAMPLE], { MAILROOM_URL: env.MAILROOM_URL })).toMatchObject({
      code: 1,
      stderr: expect.stringContaining('MAILROOM_API_KEY'),
    });
    const wrongKey = await mailroom(['plan', EXAMPLE], { ...env, MAILROOM_API_KEY: 'svc_sk_admin_' + '0'.repeat(64) });
    expect(wrongKey).toMatchObject({ code: 1, stderr: expect.stringContaining('Error 401') });
    expect(await mailroom(['plan', EXAMPLE], { ...env, MAILROOM_URL: 'http://127.0.0.1:1' })).toMatchObject({
      code: 1,
      stderr: expect.stringContaining('Cannot reach Mailroom'),
    });
  });

  it('bootstrap prints an operator admin key (once) that the running service accepts', async () => {
    const stores = {
      NODE_ENV: 'test',
      DATABASE_URL: t.env.DATABASE_URL,
      REDIS_URL: t.env.REDIS_URL,
      REDIS_KEY_PREFIX: t.env.REDIS_KEY_PREFIX,
    };
    const run = await mailroom(['bootstrap'], stores);
    expect(run).toMatchObject({ code: 0, stderr: expect.stringContaining('shown once') });
    const key = run.stdout.trim();
    expect(key).toMatch(/^svc_sk_admin_[0-9a-f]{64}$/);
    const accounts = await t.http.get('/admin/accounts').set('Authorization', `Bearer ${key}`);
    expect(accounts.status).toBe(200);
    expect(accounts.body.accounts.map((account: { name: string }) => account.name)).toContain('CLI');

    // A second run adds a second key to the same operator account.
    const again = await mailroom(['bootstrap'], stores);
    expect(again.stdout.trim()).not.toBe(key);
    expect((await t.http.get('/admin/accounts').set('Authorization', `Bearer ${again.stdout.trim()}`)).status).toBe(200);
  });

  it('bootstrap says in one line which store it cannot reach, and which variable names it', async () => {
    const run = await mailroom(['bootstrap'], {
      NODE_ENV: 'test',
      DATABASE_URL: 'postgres://postgres@127.0.0.1:1/mailroom',
      STARTUP_TIMEOUT_MS: '1000',
    });
    expect(run.code).toBe(1);
    expect(run.stderr.trim().split('\n').at(-1)).toMatch(
      /^PostgreSQL at postgres:\/\/postgres@127\.0\.0\.1:1\/mailroom \(DATABASE_URL\) did not answer within 1 s .*set DATABASE_URL/,
    );
    const invalid = await mailroom(['bootstrap'], { NODE_ENV: 'test', PORT: 'abc' });
    expect(invalid).toMatchObject({ code: 1, stderr: expect.stringContaining('PORT must be an integer number (got "abc")') });
  });

  it('migrate creates a missing database and applies every migration once, as a start would', async () => {
    const name = `mailroom_cli_migrate_${shortRandom()}`;
    try {
      const first = await mailroom(['migrate'], { NODE_ENV: 'test', DATABASE_URL: databaseUrl(name) });
      expect(first).toMatchObject({ code: 0, stdout: expect.stringMatching(/^Applied \d+ migration\(s\):\n\w+\d{13}/) });
      const again = await mailroom(['migrate'], { NODE_ENV: 'test', DATABASE_URL: databaseUrl(name) });
      expect(again).toMatchObject({ code: 0, stdout: 'No migrations to apply.\n' });
    } finally {
      await dropDatabase(name);
    }
  });

  it('is the package’s bin: `mailroom --help` lists its commands', async () => {
    const help = await new Promise<CliRun>((resolve) =>
      execFile(process.execPath, [join(ROOT, 'bin/mailroom.js'), '--help'], { cwd: ROOT }, (error, stdout, stderr) =>
        resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
      ),
    );
    expect(help.code).toBe(0);
    for (const command of ['push', 'plan', 'export', 'bootstrap', 'migrate', 'reseal-secrets'])
      expect(help.stdout).toMatch(new RegExp(`^  ${command}\\b`, 'm'));
  });
});
