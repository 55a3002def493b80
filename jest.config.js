/** Unit tests beside the code, e2e tests in test/e2e against real PostgreSQL, Redis and SMTP. */
const transform = {
  '^.+\\.ts$': [
    '@swc/jest',
    {
      jsc: {
        parser: { syntax: 'typescript', decorators: true },
        transform: { legacyDecorator: true, decoratorMetadata: true, useDefineForClassFields: false },
        target: 'es2022',
        keepClassNames: true,
      },
      module: { type: 'commonjs' },
    },
  ],
  // ESM-only packages (@nestjs/terminus, file-type and its dependencies): jest-runtime cannot require() ES modules as Node does.
  '^.+\\.js$': ['@swc/jest', { jsc: { parser: { syntax: 'ecmascript' }, target: 'es2022' }, module: { type: 'commonjs' } }],
};
const ESM_PACKAGES = [
  '@nestjs/terminus',
  'file-type',
  'strtok3',
  'token-types',
  '@tokenizer/inflate',
  'uint8array-extras',
  '@borewit/text-codec',
];
const transformIgnorePatterns = [`/node_modules/(?!(${ESM_PACKAGES.join('|')})/)`];
// file-type exports only `import` / `module-sync` conditions, which Jest's CommonJS resolver does not use.
const moduleNameMapper = { '^file-type$': '<rootDir>/node_modules/file-type/index.js' };

module.exports = {
  testTimeout: 60000,
  projects: [
    {
      displayName: 'unit',
      testEnvironment: 'node',
      rootDir: __dirname,
      testMatch: ['<rootDir>/src/**/*.spec.ts'],
      transform,
      transformIgnorePatterns,
      moduleNameMapper,
    },
    {
      displayName: 'e2e',
      testEnvironment: 'node',
      rootDir: __dirname,
      testMatch: ['<rootDir>/test/e2e/**/*.e2e-spec.ts'],
      transform,
      transformIgnorePatterns,
      moduleNameMapper,
      globalSetup: '<rootDir>/test/support/global-setup.ts',
      globalTeardown: '<rootDir>/test/support/global-teardown.ts',
    },
    {
      // fast-check over every route of the OpenAPI document: no input gives a 5xx, a hang or another body shape.
      displayName: 'property',
      testEnvironment: 'node',
      rootDir: __dirname,
      testMatch: ['<rootDir>/test/property/**/*.property-spec.ts'],
      transform,
      transformIgnorePatterns,
      moduleNameMapper,
      globalSetup: '<rootDir>/test/support/global-setup.ts',
      globalTeardown: '<rootDir>/test/support/global-teardown.ts',
    },
    {
      // Floods and backlogs whose memory is measured against a baseline: run one at a time (--runInBand), so that
      // no other test shares the machine with them.
      displayName: 'load',
      testEnvironment: 'node',
      rootDir: __dirname,
      testMatch: ['<rootDir>/test/load/**/*.load-spec.ts'],
      transform,
      transformIgnorePatterns,
      moduleNameMapper,
      globalSetup: '<rootDir>/test/support/global-setup.ts',
      globalTeardown: '<rootDir>/test/support/global-teardown.ts',
    },
    {
      // Outages: each file starts its own redis-server / PostgreSQL and stops them, never the machine's.
      displayName: 'chaos',
      testEnvironment: 'node',
      rootDir: __dirname,
      testMatch: ['<rootDir>/test/chaos/**/*.chaos-spec.ts'],
      transform,
      transformIgnorePatterns,
      moduleNameMapper,
      globalSetup: '<rootDir>/test/support/global-setup.ts',
      globalTeardown: '<rootDir>/test/support/global-teardown.ts',
    },
  ],
};
