// The import rules `npm run lint` holds the code to (dependency-cruiser): the layers drawn in docs/architecture.md.
const infrastructure = '^src/(common|config|logging|redis|database|queue|file-checks)/';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-folder-cycles',
      comment: 'Folders of src/ import each other one way only: a cycle means two folders are one, or one of them is in the wrong place.',
      severity: 'error',
      scope: 'folder',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'no-file-cycles',
      comment: 'Files import each other one way only.',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'infrastructure-imports-no-feature',
      comment:
        'common/, config/, logging/, redis/, database/, queue/ and file-checks/ are what every feature stands on; they import none of them.',
      severity: 'error',
      from: { path: infrastructure },
      to: { path: '^src/', pathNot: infrastructure },
    },
    {
      name: 'nodemailer-internals-in-one-file',
      comment: "nodemailer's lib/ files are reached through src/email/transport/nodemailer.ts only, where the pinned version is checked.",
      severity: 'error',
      from: { pathNot: '^src/email/transport/nodemailer\\.ts$' },
      // Its own files or its types' lib/, whichever the resolver finds; the main entry (`import … from 'nodemailer'`) is public.
      to: { path: 'node_modules/(@types/)?nodemailer/(lib/|dist/(?!cjs/nodemailer\\.js$))' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '\\.spec\\.ts$' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
