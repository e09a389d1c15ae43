import { describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import { Correlation } from "../../../src/domain/Case.js"
import { generateCaseId } from "../../../src/domain/Ids.js"
import { NotFound, ObligationsOutstanding } from "../../../src/errors/StoreError.js"
import { CaseStore } from "../../../src/services/CaseStore.js"
import { assert } from "../../support/Assert.js"
import { asFreshTenant, type Tester } from "../../support/Backend.js"
import { assertError } from "../../support/Errors.js"
import { at, deadline, key, open, read } from "./Fixtures.js"

export const correlation = (test: Tester) => {
  describe("correlate", () => {
    test("the first key held by an open case decides, in the given order", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* CaseStore
          const a = yield* open([key("doc", "A")])
          const b = yield* open([key("doc", "B")])
          assert.deepStrictEqual(yield* store.correlate([key("doc", "B"), key("doc", "A")]), Option.some(b))
          assert.deepStrictEqual(yield* store.correlate([key("doc", "none"), key("doc", "A")]), Option.some(a))
        }),
      ))

    test("a closed case does not match", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* CaseStore
          const a = yield* open([key("doc", "A")])
          yield* store.close(a)
          assert.deepStrictEqual(yield* store.correlate([key("doc", "A")]), Option.none())
        }),
      ))

    test("no keys or unknown keys give none", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* CaseStore
          yield* open([key("doc", "A")])
          assert.deepStrictEqual(yield* store.correlate([]), Option.none())
          assert.deepStrictEqual(yield* store.correlate([key("doc", "Z"), key("other", "A")]), Option.none())
        }),
      ))
  })

  describe("correlateOrOpen", () => {
    test("a new key opens a case: open, state null, version 0, openedAt = at, holding every key", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* CaseStore
          const result = yield* store.correlateOrOpen("invoice", [key("doc", "1"), key("po", "7")], at(4242))
          assert.strictEqual(result._tag, "Opened")
          const kase = yield* read(result.case)
          assert.strictEqual(kase.kind, "invoice")
          assert.strictEqual(kase.status, "open")
          assert.strictEqual(kase.state, null)
          assert.strictEqual(kase.version, 0)
          assert.strictEqual(kase.openedAt, 4242)
          assert.deepStrictEqual(kase.runs, [])
          assert.deepStrictEqual(kase.correlation.map(String), ["doc=1", "po=7"])
          assert.deepStrictEqual(yield* store.correlate([key("po", "7")]), Option.some(result.case))
        }),
      ))

    test("a repeat with the same keys attaches to the case it opened, whichever key comes first", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* CaseStore
          const a = yield* open([key("doc", "1"), key("po", "7")])
          for (const keys of [
            [key("doc", "1")],
            [key("po", "7"), key("doc", "1")],
            [key("doc", "1"), key("new", "x")],
          ]) {
            assert.deepStrictEqual(
              yield* store.correlateOrOpen("claim", keys, at(2000)),
              Correlation.Attached({ case: a }),
            )
          }
        }),
      ))

    test("any key held by an open case attaches to it", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* CaseStore
          const a = yield* open([key("doc", "1")])
          const result = yield* store.correlateOrOpen("claim", [key("new", "x"), key("doc", "1")], at(2000))
          assert.strictEqual(result._tag, "Attached")
          assert.strictEqual(result.case, a)
        }),
      ))

    test("empty keys always open a case nothing can correlate to", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* CaseStore
          const first = yield* store.correlateOrOpen("claim", [], at(1))
          const second = yield* store.correlateOrOpen("claim", [], at(1))
          assert.strictEqual(first._tag, "Opened")
          assert.strictEqual(second._tag, "Opened")
          assert.notStrictEqual(first.case, second.case)
          assert.deepStrictEqual((yield* read(first.case)).correlation, [])
        }),
      ))

    test("after close, the same key opens a fresh case", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* CaseStore
          const a = yield* open([key("doc", "1")])
          yield* store.close(a)
          const again = yield* store.correlateOrOpen("claim", [key("doc", "1")], at(5000))
          assert.strictEqual(again._tag, "Opened")
          assert.notStrictEqual(again.case, a)
        }),
      ))

    test("a key offered twice is held once", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const a = yield* open([key("doc", "1"), key("doc", "1")])
          assert.deepStrictEqual((yield* read(a)).correlation.map(String), ["doc=1"])
        }),
      ))
  })

  describe("close", () => {
    test("releases every key of the case", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* CaseStore
          const a = yield* open([key("doc", "1"), key("po", "2")])
          yield* store.close(a)
          assert.strictEqual((yield* read(a)).status, "closed")
          assert.deepStrictEqual(yield* store.correlate([key("doc", "1")]), Option.none())
          assert.deepStrictEqual(yield* store.correlate([key("po", "2")]), Option.none())
        }),
      ))

    test("pending or warned deadlines refuse it and change nothing", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* CaseStore
          const a = yield* open([key("doc", "1")])
          yield* store.registerDeadline(deadline(a, "reply", 100, "pending"))
          yield* store.registerDeadline(deadline(a, "review", 200, "warned"))
          yield* store.registerDeadline(deadline(a, "old", 50, "met"))
          const error = yield* Effect.flip(store.close(a))
          assertError(error, new ObligationsOutstanding({ case: a, outstanding: 2 }))
          assert.strictEqual((yield* read(a)).status, "open")
          assert.deepStrictEqual(yield* store.correlate([key("doc", "1")]), Option.some(a))
        }),
      ))

    test("breached, met and cancelled deadlines are no obstacle", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* CaseStore
          const a = yield* open([key("doc", "1")])
          yield* store.registerDeadline(deadline(a, "x", 100, "breached"))
          yield* store.registerDeadline(deadline(a, "y", 100, "met"))
          yield* store.registerDeadline(deadline(a, "z", 100, "cancelled"))
          yield* store.close(a)
          assert.strictEqual((yield* read(a)).status, "closed")
        }),
      ))

    test("closing a closed case succeeds", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* CaseStore
          const a = yield* open([key("doc", "1")])
          yield* store.close(a)
          yield* store.close(a)
          assert.strictEqual((yield* read(a)).status, "closed")
        }),
      ))

    test("a missing case is NotFound", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* CaseStore
          const missing = generateCaseId()
          assertError(yield* Effect.flip(store.close(missing)), new NotFound({ what: missing }))
        }),
      ))
  })
}
