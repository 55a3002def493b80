// altcha-lib 2 publishes its classic API (the one the `altcha` widget's base64 JSON payload is made for)
// only under the `altcha-lib/v1` export, which TypeScript's node10 resolution (module: commonjs) does not
// read. Point the types at the file that export loads under require().
declare module 'altcha-lib/v1' {
  export * from 'altcha-lib/dist/cjs/v1/index';
  export type * from 'altcha-lib/dist/cjs/v1/types';
}
