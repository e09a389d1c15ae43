/**
 * Assertions on node's strict deep equality. chai's deep equality walks iterables, and an
 * Effect `Option` is iterable, so chai reads `Option.some(x)` and `Option.none()` as equal: a
 * test that cannot fail. Node compares own properties and prototypes, so those differ.
 */
import * as node from "node:assert/strict"

export const assert = {
  deepStrictEqual: <A>(actual: A, expected: A, message?: string): void =>
    node.deepStrictEqual(actual, expected, message),
  strictEqual: <A>(actual: A, expected: A, message?: string): void => node.strictEqual(actual, expected, message),
  notStrictEqual: <A>(actual: A, expected: A, message?: string): void => node.notStrictEqual(actual, expected, message),
  isTrue: (actual: boolean, message?: string): void => node.strictEqual(actual, true, message),
  isFalse: (actual: boolean, message?: string): void => node.strictEqual(actual, false, message),
  include: <A>(haystack: ReadonlyArray<A>, needle: A, message?: string): void =>
    node.ok(haystack.includes(needle), message ?? `expected ${String(needle)} in [${haystack.join(", ")}]`),
  match: (actual: string, pattern: RegExp, message?: string): void => node.match(actual, pattern, message),
  fail: (message: string): never => node.fail(message),
}
