import { AccountConfig, checkConfigFile, emptyConfig, toConfigFile } from './config-file';
import { canonical, mergeConfig, planChanges } from './config-plan';

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

  it('refuses what is not a mapping of sections', () => {
    expect(checkConfigFile([]).errors).toEqual([{ field: '(file)', message: expect.stringContaining('must be an object') }]);
    expect(checkConfigFile(undefined).errors).toHaveLength(1);
  });
});
