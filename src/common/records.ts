/**
 * Records keyed by what users write (form field names, template variables, header names, metadata keys). A plain
 * `{}` inherits from Object.prototype: `record['constructor']` is a function before anything is stored under it,
 * and `record['__proto__'] = value` replaces the prototype instead of storing a field. These records have no
 * prototype, so every name is an ordinary key; JSON.stringify, Object.entries and the template engines see them as
 * plain objects.
 */
export type UserKeyed<T> = Record<string, T>;

/**
 * Without a prototype a record has no toString or valueOf either, so printing it whole (`{{ form }}` in Liquid,
 * `'' + record` in Handlebars) would throw "Cannot convert object to primitive value". It prints as a plain object
 * does. A symbol, not enumerable: no key a user can write, and JSON.stringify, Object.entries and spreads skip it.
 */
const PRINTS_AS_OBJECT: PropertyDescriptorMap = {
  [Symbol.toPrimitive]: { value: () => '[object Object]', enumerable: false, writable: false, configurable: false },
};

/** An empty record without a prototype. */
export function userKeyed<T>(): UserKeyed<T> {
  return Object.create(null, PRINTS_AS_OBJECT) as UserKeyed<T>;
}

/** A record without a prototype holding `entries` in order (later entries of a name win). */
export function userKeyedFrom<T>(entries: Iterable<readonly [string, T]>): UserKeyed<T> {
  const record = userKeyed<T>();
  for (const [key, value] of entries) record[key] = value;
  return record;
}

/** A copy without a prototype of each record given, merged left to right (later ones win), of their own keys only. */
export function mergeUserKeyed<T>(...records: readonly (Readonly<Record<string, T>> | null | undefined)[]): UserKeyed<T> {
  const merged = userKeyed<T>();
  for (const record of records) if (record) for (const [key, value] of Object.entries(record)) merged[key] = value;
  return merged;
}

/** `record[key]` if the record holds it itself; never an inherited property such as `constructor`. */
export function ownValue<T>(record: Readonly<Record<string, T>> | null | undefined, key: string): T | undefined {
  return record && Object.hasOwn(record, key) ? record[key] : undefined;
}
