/**
 * The races CaseStore settles (G5), fired from many fibers through a small pool. They prove
 * something where statements interleave (`concurrentWriters`); elsewhere they confirm serial
 * correctness with the same assertions.
 */
import { randomUUID } from "node:crypto"
import { describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import { CaseVersion, generateRunId } from "../../../src/domain/Ids.js"
import { CaseConflict } from "../../../src/errors/StoreError.js"
import { CaseStore } from "../../../src/services/CaseStore.js"
import { assert } from "../../support/Assert.js"
import { type Backend, onPool, type Tester } from "../../support/Backend.js"
import { assertError } from "../../support/Errors.js"
import { fire, runs, shape } from "../../support/Races.js"
import { at, key, open, read } from "./Fixtures.js"

export const races = (test: Tester, backend: Backend) => {
  describe("races", () => {
    test.prop(
      "concurrent correlateOrOpen with one new key opens exactly one case and attaches the rest to it",
      shape,
      ({ fibers, pool }) =>
        Effect.gen(function* () {
          const store = yield* CaseStore
          const k = key("race", randomUUID())
          const results = yield* fire(fibers, () => store.correlateOrOpen("claim", [k], at(1)))
          const opened = results.filter((r) => r._tag === "Opened")
          assert.strictEqual(opened.length, 1)
          const winner = opened[0]?.case
          for (const r of results) assert.strictEqual(r.case, winner)
          assert.deepStrictEqual(yield* store.correlate([k]), Option.fromNullable(winner))
        }).pipe(onPool(backend, pool)),
      runs,
    )

    test.prop(
      "concurrent putState at one version: one wins, the rest are CaseConflict at the new version",
      shape,
      ({ fibers, pool }) =>
        Effect.gen(function* () {
          const store = yield* CaseStore
          const a = yield* open([key("race", randomUUID())])
          const results = yield* fire(fibers, (i) =>
            Effect.either(store.putState(a, CaseVersion.make(0), { writer: i })),
          )
          const winners = results.flatMap((r, i) => (r._tag === "Right" ? [i] : []))
          assert.strictEqual(winners.length, 1)
          for (const r of results) {
            if (r._tag === "Left") assertError(r.left, new CaseConflict({ case: a, expected: 0, current: 1 }))
            else assert.strictEqual(r.right, 1)
          }
          const kase = yield* read(a)
          assert.deepStrictEqual(kase.state, { writer: winners[0] ?? -1 })
          assert.strictEqual(kase.version, 1)
        }).pipe(onPool(backend, pool)),
      runs,
    )

    test.prop(
      "concurrent attachRun of distinct runs: every run attached once, at distinct positions",
      shape,
      ({ fibers, pool }) =>
        Effect.gen(function* () {
          const store = yield* CaseStore
          const a = yield* open([key("race", randomUUID())])
          const ids = Array.from({ length: fibers }, () => generateRunId())
          yield* fire(fibers, (i) => store.attachRun(a, ids[i] ?? generateRunId()))
          const attached = (yield* read(a)).runs
          assert.strictEqual(attached.length, fibers)
          assert.deepStrictEqual([...attached].sort(), [...ids].sort())
        }).pipe(onPool(backend, pool)),
      runs,
    )
  })
}
