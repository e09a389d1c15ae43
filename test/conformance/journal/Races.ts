/**
 * The races the journal settles (G5), fired from many fibers through a small, warmed pool. They
 * prove something where statements interleave (`concurrentWriters`); elsewhere they confirm
 * serial correctness with the same assertions.
 */
import { describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import { Epoch, generateRunId } from "../../../src/domain/Ids.js"
import { DuplicateAdmission, DuplicateEffect, Fenced, LeaseHeld } from "../../../src/errors/StoreError.js"
import { JournalStore } from "../../../src/services/JournalStore.js"
import { assert } from "../../support/Assert.js"
import { type Backend, onPool } from "../../support/Backend.js"
import { assertError } from "../../support/Errors.js"
import { fire, runs, shape } from "../../support/Races.js"
import { admitted, effectKey, leased, note, one, started, type Tester } from "./Fixtures.js"

export const races = (test: Tester, backend: Backend) => {
  describe("races", () => {
    test.prop(
      "N acquirers of a free lease: exactly one wins, the others see its lease",
      shape,
      ({ fibers, pool }) =>
        Effect.gen(function* () {
          const store = yield* JournalStore
          const run = generateRunId()
          const results = yield* fire(fibers, (i) => Effect.either(store.acquire(run, `worker-${i}`, 60)))
          const winners = results.flatMap((r) => (r._tag === "Right" ? [r.right] : []))
          assert.strictEqual(winners.length, 1)
          const [won] = winners
          assert.strictEqual(won?.epoch, 1)
          for (const r of results) {
            if (r._tag === "Left") {
              const e = r.left
              assert.strictEqual(e._tag, "LeaseHeld")
              if (e._tag === "LeaseHeld")
                assertError(
                  e,
                  new LeaseHeld({ run, owner: won?.owner ?? "", epoch: 1, remainingSecs: e.remainingSecs }),
                )
            }
          }
        }).pipe(onPool(backend, pool)),
      runs,
    )

    test.prop(
      "a writer holding a superseded epoch is Fenced and moves nothing",
      shape,
      ({ fibers, pool }) =>
        Effect.gen(function* () {
          const store = yield* JournalStore
          const { run, epoch } = yield* leased("worker-a")
          // The takeover races the old holder's appends: each lands before it or is Fenced.
          const takeover = Effect.zipRight(store.releaseLease(run, epoch), store.acquire(run, "worker-b", 60))
          const [results, next] = yield* Effect.all(
            [fire(fibers, (i) => Effect.either(store.append(run, epoch, one(note(`old ${i}`))))), takeover],
            { concurrency: "unbounded" },
          )
          const landed = results.filter((r) => r._tag === "Right").length
          for (const r of results) {
            if (r._tag === "Left") assertError(r.left, new Fenced({ run, held: 1, current: 2 }))
          }
          assert.strictEqual(next.epoch, 2)
          assert.strictEqual((yield* store.head(run)).seq, landed)
          assertError(
            yield* Effect.flip(store.append(run, epoch, one(note("late")))),
            new Fenced({ run, held: 1, current: 2 }),
          )
          const after = yield* store.append(run, next.epoch, one(note("new holder")))
          assert.strictEqual(after[0]?.seq, landed + 1)
          assert.strictEqual((yield* store.verify(run)).seq, landed + 1)
        }).pipe(onPool(backend, pool)),
      runs,
    )

    test.prop(
      "N concurrent appends of one EffectStarted key: exactly one lands",
      shape,
      ({ fibers, pool }) =>
        Effect.gen(function* () {
          const store = yield* JournalStore
          const { run, epoch } = yield* leased()
          const key = effectKey()
          const results = yield* fire(fibers, () => Effect.either(store.append(run, epoch, one(started(key)))))
          assert.strictEqual(results.filter((r) => r._tag === "Right").length, 1)
          for (const r of results) {
            if (r._tag === "Left") assertError(r.left, new DuplicateEffect({ run, effect: key }))
          }
          assert.strictEqual((yield* store.head(run)).seq, 1)
        }).pipe(onPool(backend, pool)),
      runs,
    )

    test.prop(
      "concurrent appends by the lease holder keep seq contiguous and the chain verifies",
      shape,
      ({ fibers, pool }) =>
        Effect.gen(function* () {
          const store = yield* JournalStore
          const { run, epoch } = yield* leased()
          const sizes = Array.from({ length: fibers }, (_, i) => 1 + (i % 3))
          yield* fire(fibers, (i) =>
            store.append(run, epoch, [
              note(`${i}.0`),
              ...Array.from({ length: (sizes[i] ?? 1) - 1 }, (_, j) => note(`${i}.${j + 1}`)),
            ]),
          )
          const total = sizes.reduce((a, b) => a + b, 0)
          const records = yield* store.read(run, 1)
          assert.deepStrictEqual(
            records.map((r) => r.seq),
            Array.from({ length: total }, (_, i) => i + 1),
          )
          assert.deepStrictEqual(yield* store.verify(run), { seq: total, hash: records[total - 1]?.hash })
        }).pipe(onPool(backend, pool)),
      runs,
    )

    test.prop(
      "N opening appends of new runs with one key: exactly one run is written, the others write nothing and learn which",
      shape,
      ({ fibers, pool }) =>
        Effect.gen(function* () {
          const store = yield* JournalStore
          const key = `open-${generateRunId()}`
          const runs = Array.from({ length: fibers }, () => generateRunId())
          const open = { open: { owner: "worker", ttlSecs: 60 } }
          const results = yield* fire(fibers, (i) => {
            const run = runs[i] ?? generateRunId()
            return Effect.either(
              Effect.as(store.append(run, Epoch.make(1), [admitted(key), note("first")], undefined, open), run),
            )
          })
          const winners = results.flatMap((r) => (r._tag === "Right" ? [r.right] : []))
          assert.strictEqual(winners.length, 1)
          const [holder] = winners
          assert.deepStrictEqual(yield* store.admittedAs(key), Option.fromNullable(holder))
          for (const r of results) {
            if (r._tag === "Left") assertError(r.left, new DuplicateAdmission({ key, run: holder ?? "" }))
          }
          // The losers hold no lease and no record: a first acquire of each gets epoch 1.
          for (const run of runs) {
            if (run === holder) continue
            assert.strictEqual((yield* store.head(run)).seq, 0)
            assert.strictEqual((yield* store.acquire(run, "probe", 60)).epoch, 1)
          }
          assert.strictEqual((yield* store.verify(holder ?? runs[0] ?? generateRunId())).seq, 2)
        }).pipe(onPool(backend, pool)),
      runs,
    )

    test.prop(
      "N concurrent admissions with one key: exactly one run holds it, the others learn which",
      shape,
      ({ fibers, pool }) =>
        Effect.gen(function* () {
          const store = yield* JournalStore
          const key = `order-${generateRunId()}`
          const contenders = yield* fire(fibers, () => leased())
          const results = yield* fire(fibers, (i) => {
            const c = contenders[i]
            return c === undefined
              ? Effect.die("no contender")
              : Effect.either(Effect.as(store.append(c.run, c.epoch, one(admitted(key))), c.run))
          })
          const winners = results.flatMap((r) => (r._tag === "Right" ? [r.right] : []))
          assert.strictEqual(winners.length, 1)
          const [holder] = winners
          assert.deepStrictEqual(yield* store.admittedAs(key), Option.fromNullable(holder))
          for (const r of results) {
            if (r._tag === "Left") assertError(r.left, new DuplicateAdmission({ key, run: holder ?? "" }))
          }
          const heads = yield* Effect.forEach(contenders, (c) => store.head(c.run))
          assert.strictEqual(heads.filter((h) => h.seq === 1).length, 1)
          assert.strictEqual(heads.filter((h) => h.seq === 0).length, fibers - 1)
        }).pipe(onPool(backend, pool)),
      runs,
    )
  })
}
