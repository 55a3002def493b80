#!/usr/bin/env node
// The `mailroom` command of the package (`npx mailroom …`): the compiled CLI, built by `npm ci` / `npm install`.
require('../dist/cli.js');
