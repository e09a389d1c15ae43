import { describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import { generateCaseId } from "../../../src/domain/Ids.js"
import { NotFound } from "../../../src/errors/StoreError.js"
import { CaseStore } from "../../../src/services/CaseStore.js"
import { assert } from "../../support/Assert.js"
import { asFreshTenant, type Tester } from "../../support/Backend.js"
import { assertError } from "../../support/Errors.js"
import { at, deadline, key, open } from "./Fixtures.js"

const names = (ds: ReadonlyArray<{ readonly name: string }>) => ds.map((d) => d.name)

export const deadlines = (test: Tester) => {
  describe("registerDeadline / deadlines", () => {
    test("a repeat is a no-op and the first registration stands, stored exactly", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* CaseStore
          const a = yield* open([key("doc", "1")])
          const first = deadline(a, "reply", 2 ** 40 + 1, "pending", 2 ** 40 - 7)
          yield* store.registerDeadline(first)
          yield* store.registerDeadline(deadline(a, "reply", 5, "breached"))
          assert.deepStrictEqual(yield* store.deadlines(a), [first])
        }),
      ))

    test("every state comes back, ascending resolvedAt", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* CaseStore
          const a = yield* open([key("doc", "1")])
          yield* store.registerDeadline(deadline(a, "c", 300, "met"))
          yield* store.registerDeadline(deadline(a, "a", 100, "breached"))
          yield* store.registerDeadline(deadline(a, "b", 200, "cancelled"))
          yield* store.registerDeadline(deadline(a, "d", 400, "warned", 350))
          assert.deepStrictEqual(names(yield* store.deadlines(a)), ["a", "b", "c", "d"])
          assert.deepStrictEqual(yield* store.deadlines(generateCaseId()), [])
        }),
      ))

    test("registering on a missing case is NotFound naming the case", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* CaseStore
          const missing = generateCaseId()
          assertError(
            yield* Effect.flip(store.registerDeadline(deadline(missing, "reply", 1))),
            new NotFound({ what: missing }),
          )
        }),
      ))
  })

  describe("setDeadlineState", () => {
    test("is an unconditional write with no transition guard", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* CaseStore
          const a = yield* open([key("doc", "1")])
          yield* store.registerDeadline(deadline(a, "reply", 100))
          yield* store.setDeadlineState(a, "reply", "breached")
          yield* store.setDeadlineState(a, "reply", "pending")
          const [d] = yield* store.deadlines(a)
          assert.strictEqual(d?.state, "pending")
        }),
      ))

    test("a missing deadline is NotFound naming <case>/<name>", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* CaseStore
          const a = yield* open([key("doc", "1")])
          assertError(yield* Effect.flip(store.setDeadlineState(a, "nope", "met")), new NotFound({ what: `${a}/nope` }))
        }),
      ))
  })

  describe("due", () => {
    test("pending or warned, due at or before now (inclusive), earliest first, then limited", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* CaseStore
          const a = yield* open([key("doc", "1")])
          yield* store.registerDeadline(deadline(a, "later", 300))
          yield* store.registerDeadline(deadline(a, "now", 200, "warned"))
          yield* store.registerDeadline(deadline(a, "earlier", 100))
          yield* store.registerDeadline(deadline(a, "met", 50, "met"))
          yield* store.registerDeadline(deadline(a, "breached", 60, "breached"))
          yield* store.registerDeadline(deadline(a, "cancelled", 70, "cancelled"))
          assert.deepStrictEqual(names(yield* store.due(at(200), 10)), ["earlier", "now"])
          assert.deepStrictEqual(names(yield* store.due(at(200), 1)), ["earlier"])
          assert.deepStrictEqual(names(yield* store.due(at(199), 10)), ["earlier"])
          assert.deepStrictEqual(yield* store.due(at(200), 0), [])
        }),
      ))

    test("a passed warning qualifies before the due time", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* CaseStore
          const a = yield* open([key("doc", "1")])
          yield* store.registerDeadline(deadline(a, "reply", 500, "pending", 400))
          assert.deepStrictEqual(yield* store.due(at(399), 10), [])
          assert.deepStrictEqual(names(yield* store.due(at(400), 10)), ["reply"])
        }),
      ))
  })

  describe("breached", () => {
    test("only breached ones, longest overdue first, still listed after the case closes", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* CaseStore
          const a = yield* open([key("doc", "1")])
          const b = yield* open([key("doc", "2")])
          yield* store.registerDeadline(deadline(a, "second", 200, "breached"))
          yield* store.registerDeadline(deadline(b, "first", 100, "breached"))
          yield* store.registerDeadline(deadline(b, "pending", 50))
          yield* store.setDeadlineState(b, "pending", "met")
          yield* store.close(a)
          const listed = yield* store.breached(10)
          assert.deepStrictEqual(names(listed), ["first", "second"])
          assert.deepStrictEqual(Option.some(listed[1]?.case), Option.some(a))
          assert.deepStrictEqual(names(yield* store.breached(1)), ["first"])
          assert.deepStrictEqual(yield* store.breached(0), [])
        }),
      ))
  })
}
