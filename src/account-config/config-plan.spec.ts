import { AccountConfig, checkConfigFile, emptyConfig, toConfigFile } from './config-file';
import { canonical, mergeConfig, planChanges, projectsKeptInUse, unknownProjects } from './config-plan';

function config(file: unknown): AccountConfig {
  const { config, errors } = checkConfigFile(file);
  expect(errors).toEqual([]);
  return config;
}

const current = config({
  project: { name: 'Site', slug: 'site' },
  domains: {
    'a.example': { forwarding: { info: 'x@example.org', old: 'y@example.org' }, forms: { contact: { to: 't@example.org' } } },
    'gone.example': { forms: { f: {} } },
  },
  templates: { keep: { subject: 's', text: 't' } },
  settings: { global_limits: { hourly: 10 } },
});
current.projects = { site: 'Site', other: 'Other' };

describe('mergeConfig and planChanges', () => {
  it('plans nothing for the file the account was made from', () => {
    expect(planChanges(current, mergeConfig(current, current, false))).toEqual([]);
  });

  it('without prune keeps what the file does not name, at every level', () => {
    const file = config({ domains: { 'a.example': { forwarding: { info: 'z@example.org' } } } });
    const target = mergeConfig(current, file, false);
    expect(Object.keys(target.domains)).toEqual(['a.example', 'gone.example']);
    expect(target.domains['a.example'].forwarding).toEqual({ info: ['z@example.org'], old: ['y@example.org'] });
    expect(target.domains['a.example'].forms).toEqual(current.domains['a.example'].forms);
    expect(target.settings).toEqual(current.settings);
    expect(target.project).toEqual(current.project);
    expect(planChanges(current, target)).toEqual([
      {
        action: 'update',
        kind: 'forwarding',
        path: 'domains.a.example.forwarding.info',
        changes: [{ field: 'to', before: ['x@example.org'], after: ['z@example.org'] }],
      },
    ]);
  });

  it('with prune deletes what the file does not name, a deleted parent standing for its children', () => {
    const file = config({ domains: { 'a.example': { forwarding: { info: 'x@example.org' } } } });
    const changes = planChanges(current, mergeConfig(current, file, true));
    expect(changes.map((c) => [c.action, c.path])).toEqual([
      ['delete', 'projects.site'],
      ['delete', 'projects.other'],
      ['delete', 'settings.global_limits'],
      ['delete', 'domains.a.example.forwarding.old'],
      ['delete', 'domains.a.example.forms.contact'],
      ['delete', 'domains.gone.example'],
      ['delete', 'templates.keep'],
    ]);
    expect(changes.find((c) => c.path === 'settings.global_limits')!.changes).toEqual([{ field: 'hourly', before: 10, after: null }]);
  });

  it('replaces a form or template whole: a setting the file leaves out is removed', () => {
    const file = config({ domains: { 'a.example': { forms: { contact: { to: 't@example.org', redirect: 'https://a.example/ok' } } } } });
    const once = mergeConfig(current, file, false);
    const twice = mergeConfig(once, config({ domains: { 'a.example': { forms: { contact: { to: 't@example.org' } } } } }), false);
    expect(planChanges(once, twice)).toEqual([
      {
        action: 'update',
        kind: 'form',
        path: 'domains.a.example.forms.contact',
        changes: [{ field: 'redirect', before: 'https://a.example/ok', after: null }],
      },
    ]);
  });

  it('moves the file’s collections into its project, and switches project by slug', () => {
    const file = config({
      project: { name: 'Other project', slug: 'other' },
      collections: { web: { forms: { a: { to: 'x@example.org' } } } },
    });
    const target = mergeConfig(current, file, false);
    expect(target.collections.web.project).toBe('other');
    expect(planChanges(current, target).map((c) => [c.action, c.path, c.changes])).toEqual([
      ['update', 'project', [{ field: 'slug', before: 'site', after: 'other' }]],
      ['update', 'projects.other', [{ field: 'name', before: 'Other', after: 'Other project' }]],
      [
        'create',
        'collections.web',
        [
          { field: 'name', before: null, after: 'web' },
          { field: 'project', before: null, after: 'other' },
        ],
      ],
      ['create', 'collections.web.forms.a', [{ field: 'to', before: null, after: 'x@example.org' }]],
    ]);
  });

  it('lists a project the file makes once: the file’s `project` is the project it creates', () => {
    const file = config({ project: { name: 'Acme', slug: 'acme' } });
    expect(planChanges(emptyConfig(), mergeConfig(emptyConfig(), file, false))).toEqual([
      { action: 'create', kind: 'project', path: 'projects.acme', changes: [{ field: 'name', before: null, after: 'Acme' }] },
    ]);
  });

  it('exports what checking gives back unchanged (the round trip)', () => {
    const exported = toConfigFile(current);
    const again = config(exported);
    again.projects = current.projects;
    expect(canonical(again)).toBe(canonical(current));
    expect(toConfigFile(emptyConfig())).toEqual({});
  });

  describe('several projects', () => {
    /** An account built through the API: projects a and b, collections in each, in none, and no project the file describes. */
    const account: AccountConfig = {
      ...emptyConfig(),
      projects: { a: 'Project A', b: 'Project B', empty: 'Empty' },
      collections: {
        ina: { name: 'In A', project: 'a', forms: {} },
        inb: { name: 'In B', project: 'b', forms: { f: { recipients: ['x@example.org'] } } },
        loose: { name: 'loose', project: null, forms: {} },
      },
    };
    const described: AccountConfig = { ...account, project: { slug: 'a', name: 'Project A' } };

    it.each([
      ['without a described project', account],
      ['with one', described],
    ])('exports every project and each collection’s own project, and plans nothing for the export (%s)', (_name, current) => {
      const file = toConfigFile(current);
      for (const prune of [false, true]) expect(planChanges(current, mergeConfig(current, config(file), prune))).toEqual([]);
    });

    it('writes each collection’s project unless it is the file’s project, null included', () => {
      expect(toConfigFile(account)).toEqual({
        projects: { a: { name: 'Project A' }, b: { name: 'Project B' }, empty: { name: 'Empty' } },
        collections: {
          ina: { name: 'In A', project: 'a' },
          inb: { name: 'In B', project: 'b', forms: { f: { to: 'x@example.org' } } },
          loose: { name: 'loose', project: null },
        },
      });
      const file = toConfigFile(described);
      expect(file.project).toEqual({ name: 'Project A', slug: 'a' });
      expect(Object.keys(file.projects as object)).toEqual(['b', 'empty']);
      expect(file.collections).toMatchObject({ ina: { name: 'In A' }, loose: { project: null } });
      expect((file.collections as Record<string, object>).ina).not.toHaveProperty('project');
    });

    it('moves a collection only when the file says so', () => {
      const moved = planChanges(
        account,
        mergeConfig(account, config({ collections: { loose: { project: 'b' }, ina: { name: 'In A' } } }), false),
      );
      expect(moved.map((c) => [c.action, c.path, c.changes])).toEqual([
        ['update', 'collections.loose', [{ field: 'project', before: null, after: 'b' }]],
      ]);
      const out = mergeConfig(account, config({ collections: { ina: { name: 'In A', project: null } } }), false);
      expect(out.collections.ina.project).toBeNull();
    });

    it('creates a project the file lists, renames one, and keeps the unlisted unless pruning', () => {
      const file = config({ projects: { c: 'Project C', a: { name: 'A renamed' } }, collections: { inb: { project: 'c', forms: {} } } });
      const changes = planChanges(account, mergeConfig(account, file, false));
      expect(changes.map((c) => [c.action, c.path])).toEqual([
        ['update', 'projects.a'],
        ['create', 'projects.c'],
        ['update', 'collections.inb'],
      ]);
      const pruned = mergeConfig(account, file, true);
      expect(pruned.projects).toEqual({ c: 'Project C', a: 'A renamed' });
    });

    it('never prunes a project a collection is still in', () => {
      const file = config({ collections: { ina: { name: 'In A' }, loose: { project: 'b' } } });
      const target = mergeConfig(account, file, true);
      expect(target.projects).toEqual({ a: 'Project A', b: 'Project B' });
      expect(target.collections.ina.project).toBe('a');
      expect(planChanges(account, target).map((c) => [c.action, c.path])).toEqual([
        ['update', 'collections.loose'],
        ['delete', 'projects.empty'],
        ['delete', 'collections.inb'],
      ]);
      expect([...projectsKeptInUse(file, target)]).toEqual([
        ['a', ['ina']],
        ['b', ['loose']],
      ]);
    });

    it('keeps the file’s project the default of collections that do not say, as older files had it', () => {
      const target = mergeConfig(
        account,
        config({ project: { name: 'Project B', slug: 'b' }, collections: { ina: {}, loose: { project: null } } }),
        false,
      );
      expect(target.collections.ina.project).toBe('b');
      expect(target.collections.loose.project).toBeNull();
    });

    it('names a collection’s project that neither the file nor the account has, by its path', () => {
      const file = config({
        projects: { c: 'C' },
        collections: { ina: { project: 'nope' }, inb: { project: 'c' }, loose: { project: 'b' } },
      });
      expect(unknownProjects(file, mergeConfig(account, file, true))).toEqual([
        { field: 'collections.ina.project', message: 'no project nope in the file (project, projects) or the account' },
      ]);
    });

    it('refuses a project named twice with two names, and a bad project slug', () => {
      const { errors } = checkConfigFile({
        project: { name: 'A', slug: 'a' },
        projects: { a: 'Other name', 'Bad Slug': {}, b: { colour: 'red' } },
        collections: { web: { project: 'Not A Slug' } },
      });
      expect(errors.map((e) => e.field).sort()).toEqual([
        'collections.web.project',
        'projects.Bad Slug',
        'projects.a.name',
        'projects.b.colour',
      ]);
    });
  });

  it('compares values whatever their key order', () => {
    expect(canonical({ b: 1, a: { d: [2, { y: 1, x: 2 }], c: null } })).toBe(canonical({ a: { c: null, d: [2, { x: 2, y: 1 }] }, b: 1 }));
    expect(canonical([1, 2])).not.toBe(canonical([2, 1]));
  });
});

describe('checkConfigFile', () => {
  it('names every problem by its path in the file', () => {
    const { errors } = checkConfigFile({
      project: { name: 'x' },
      domains: { 'not a domain': {}, 'b.example': { forms: { send: {} }, mx: 1 } },
      collections: { 'Bad Slug': {}, web: { forms: { a: {} } } },
      templates: { t: { type: 'sms', subject: 's', html_file: 'a.html' }, u: { subject: 's' } },
      settings: { global_limits: { weekly: 1, hourly: 1.5 }, api_requests: {} },
      extra: true,
    });
    expect(errors.map((e) => e.field).sort()).toEqual(
      [
        'collections.Bad Slug',
        'collections.web.forms.a.recipients',
        'domains.b.example.forms.send',
        'domains.b.example.mx',
        'domains.not a domain',
        'extra',
        'project.slug',
        'settings.api_requests',
        'settings.global_limits.hourly',
        'settings.global_limits.weekly',
        'templates.t.html_file',
        'templates.t.type',
        'templates.u',
      ].sort(),
    );
  });

  it('normalizes names and refuses two that become one', () => {
    const { config, errors } = checkConfigFile({ domains: { 'A.Example': null, 'a.example.': {} } });
    expect(Object.keys(config.domains)).toEqual(['a.example']);
    expect(errors).toEqual([{ field: 'domains.a.example.', message: 'a.example is named twice' }]);
  });

  it('takes a name Object.prototype has (a project or collection `constructor`) as any other name', () => {
    const { config, errors } = checkConfigFile({
      project: { name: 'Main', slug: 'constructor' },
      projects: { constructor: { name: 'Main' } },
      collections: { constructor: { name: 'Signups' } },
    });
    expect(errors).toEqual([]);
    expect(Object.entries(config.projects)).toEqual([['constructor', 'Main']]);
    const target = mergeConfig(emptyConfig(), config, false);
    expect(target.collections.constructor).toEqual({ name: 'Signups', project: 'constructor', forms: {} });
    expect(planChanges(emptyConfig(), target).map((c) => [c.action, c.path])).toEqual([
      ['create', 'projects.constructor'],
      ['create', 'collections.constructor'],
    ]);
    const exported = checkConfigFile(JSON.parse(JSON.stringify(toConfigFile(target))));
    expect(exported.errors).toEqual([]);
    expect(planChanges(target, mergeConfig(target, exported.config, true))).toEqual([]);
  });

  it('refuses what is not a mapping of sections', () => {
    expect(checkConfigFile([]).errors).toEqual([{ field: '(file)', message: expect.stringContaining('must be an object') }]);
    expect(checkConfigFile(undefined).errors).toHaveLength(1);
  });
});
