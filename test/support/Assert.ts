/**
 * Assertions on node's strict deep equality. chai's deep equality walks iterables, and an
 * Effect `Option` is iterable, so chai reads `Option.some(x)` and `Option.none()` as equal: a
 * test that cannot fail. Node compares own properties and prototypes, so those differ.
 *
 * Mismatches are reported with a bounded rendering of both sides rather than node's diff: a
 * broken store can return thousands of rows, and the diff of two such arrays took longer than
 * the run, which then hung instead of failing.
 */
import * as node from "node:assert/strict"
import { inspect, isDeepStrictEqual } from "node:util"

const show = (value: unknown): string =>
  inspect(value, { depth: 6, maxArrayLength: 20, maxStringLength: 200, breakLength: 120 })

export const assert = {
  deepStrictEqual: <A>(actual: A, expected: A, message?: string): void => {
    if (isDeepStrictEqual(actual, expected)) return
    // The renderings, not the values, so the runner's own diff stays bounded too.
    throw new node.AssertionError({
      message: message ?? "values are not deeply equal",
      actual: show(actual),
      expected: show(expected),
      operator: "deepStrictEqual",
    })
  },
  strictEqual: <A>(actual: A, expected: A, message?: string): void => node.strictEqual(actual, expected, message),
  notStrictEqual: <A>(actual: A, expected: A, message?: string): void => node.notStrictEqual(actual, expected, message),
  isTrue: (actual: boolean, message?: string): void => node.strictEqual(actual, true, message),
  isFalse: (actual: boolean, message?: string): void => node.strictEqual(actual, false, message),
  include: <A>(haystack: ReadonlyArray<A>, needle: A, message?: string): void =>
    node.ok(haystack.includes(needle), message ?? `expected ${String(needle)} among ${haystack.length} values`),
  match: (actual: string, pattern: RegExp, message?: string): void => node.match(actual, pattern, message),
  doesNotMatch: (actual: string, pattern: RegExp, message?: string): void =>
    node.doesNotMatch(actual, pattern, message),
  fail: (message: string): never => node.fail(message),
}
