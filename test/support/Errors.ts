import { assert } from "./Assert.js"

/**
 * The tag and fields of an error. Errors raised inside a transaction carry its tracing span,
 * which deep equality would walk into; the contract is the tag and the fields.
 */
const fields = (error: unknown): unknown =>
  typeof error === "object" && error !== null
    ? { _tag: (error as { _tag?: unknown })._tag, ...Object.fromEntries(Object.entries(error)) }
    : error

/** Asserts `actual` is the tagged error `expected`: same tag, same fields. */
export const assertError = (actual: unknown, expected: unknown): void =>
  assert.deepStrictEqual(fields(actual), fields(expected))
