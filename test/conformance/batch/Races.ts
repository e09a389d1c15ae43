/**
 * The races BatchStore settles (G5), fired from many fibers through a small pool. They prove
 * something where statements interleave (`concurrentWriters`); elsewhere they confirm serial
 * correctness with the same assertions.
 */
import { describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import { generateBatchId, generateRunId } from "../../../src/domain/Ids.js"
import { BatchPlanChanged } from "../../../src/errors/StoreError.js"
import { BatchStore } from "../../../src/services/BatchStore.js"
import { assert } from "../../support/Assert.js"
import { type Backend, onPool } from "../../support/Backend.js"
import { assertError } from "../../support/Errors.js"
import { fire, runs, shape } from "../../support/Races.js"
import { openBatch, type Tester } from "./Fixtures.js"

export const races = (test: Tester, backend: Backend) => {
  describe("races", () => {
    test.prop(
      "concurrent reservations of one item all return the same run, one of those offered",
      shape,
      ({ fibers, pool }) =>
        Effect.gen(function* () {
          const store = yield* BatchStore
          const b = yield* openBatch()
          const offered = Array.from({ length: fibers }, () => generateRunId())
          const got = yield* fire(fibers, (i) => store.reserve(b, "0001", offered[i] ?? generateRunId()))
          const first = got[0]?.run
          assert.include(offered, first)
          for (const r of got) assert.strictEqual(r.run, first)
          const listed = yield* store.items(b, 10)
          assert.deepStrictEqual(
            listed.map((r) => r.run),
            [first],
          )
        }).pipe(onPool(backend, pool)),
      runs,
    )

    test.prop(
      "concurrent open with two digests leaves one, and every caller with the other gets BatchPlanChanged",
      shape,
      ({ fibers, pool }) =>
        Effect.gen(function* () {
          const store = yield* BatchStore
          const id = generateBatchId()
          const digestOf = (i: number) => (i % 2 === 0 ? "plan-even" : "plan-odd")
          const results = yield* fire(fibers, (i) => Effect.either(store.open(id, digestOf(i))))
          const stored = Option.getOrThrow(yield* store.planDigest(id))
          assert.include(["plan-even", "plan-odd"], stored)
          for (const [i, r] of results.entries()) {
            const offered = digestOf(i)
            if (offered === stored) assert.strictEqual(r._tag, "Right", `caller ${i} offered the stored digest`)
            else if (r._tag === "Left") assertError(r.left, new BatchPlanChanged({ batch: id, stored, offered }))
            else assert.fail(`caller ${i} offered ${offered} over ${stored} and succeeded`)
          }
        }).pipe(onPool(backend, pool)),
      runs,
    )
  })
}
