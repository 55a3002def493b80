#!/usr/bin/env node
// The `mailroom` command of the package (`npx mailroom …`): the compiled CLI, built by `npm ci` / `npm install`.
// eslint-disable-next-line @typescript-eslint/no-require-imports -- a CommonJS script loading the CommonJS build; import() would make start-up asynchronous for nothing
require('../dist/cli.js');
