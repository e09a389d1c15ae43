/**
 * Two store instances on one database, as two plane processes are: what one instance remembers of
 * a run (pg keeps the head it last wrote or read, so its next append is one statement) must never
 * outlive what the other did to that run. Instance A is the battery's layer; B is a client of its
 * own (`pooled`), with nothing remembered. On memory both are the same maps, and the assertions
 * hold as they do for one instance.
 */
import { describe } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import * as Journal from "../../../src/domain/Journal.js"
import { Fenced, RunSealed } from "../../../src/errors/StoreError.js"
import { JournalStore } from "../../../src/services/JournalStore.js"
import { assert } from "../../support/Assert.js"
import { asFreshTenant, type Backend, onPool } from "../../support/Backend.js"
import { assertError } from "../../support/Errors.js"
import { fire, runs, shape } from "../../support/Races.js"
import { leased, note, one, type Tester } from "./Fixtures.js"

export const instances = (test: Tester, backend: Backend) => {
  describe("two instances", () => {
    /** Runs `body` with instance B's store as its argument, B built once for the test. */
    const withSecond = <A, E, R>(body: (b: typeof JournalStore.Service) => Effect.Effect<A, E, R>) =>
      Effect.scoped(
        Effect.flatMap(Layer.build(backend.pooled(2)), (context) => body(Context.get(context, JournalStore))),
      )

    test("after another instance's takeover, a remembered head's append is Fenced and writes nothing", () =>
      withSecond((b) =>
        Effect.gen(function* () {
          const a = yield* JournalStore
          const { run, epoch } = yield* leased("instance-a")
          // A's second append rides on the head A remembers from its first.
          yield* a.append(run, epoch, one(note("a 1")))
          yield* a.append(run, epoch, one(note("a 2")))
          yield* a.releaseLease(run, epoch)
          const taken = yield* b.acquire(run, "instance-b", 60)
          assert.strictEqual(taken.epoch, epoch + 1)
          // Before B writes, A's remembered head is still the run's head: only the epoch refuses.
          assertError(
            yield* Effect.flip(a.append(run, epoch, one(note("a 3, fenced")))),
            new Fenced({ run, held: epoch, current: taken.epoch }),
          )
          yield* b.append(run, taken.epoch, one(note("b 1")))
          assertError(
            yield* Effect.flip(a.append(run, epoch, one(note("a 4, fenced")))),
            new Fenced({ run, held: epoch, current: taken.epoch }),
          )
          assert.deepStrictEqual(
            (yield* a.read(run, 1)).map((r) => r.kind.kind === "Note" && r.kind.text),
            ["a 1", "a 2", "b 1"],
          )
          assert.strictEqual((yield* a.verify(run)).seq, 3)
        }),
      ).pipe(asFreshTenant))

    test("a head another instance moved is not written on: the holder's next append follows it, the chain verifies", () =>
      withSecond((b) =>
        Effect.gen(function* () {
          const a = yield* JournalStore
          const { run, epoch } = yield* leased("instance-a")
          yield* a.append(run, epoch, one(note("a 1")))
          yield* a.releaseLease(run, epoch)
          const taken = yield* b.acquire(run, "instance-b", 60)
          yield* b.append(run, taken.epoch, [note("b 1"), note("b 2")])
          yield* b.releaseLease(run, taken.epoch)
          // A holds the run again; what it remembers (head 1) is two records behind.
          const back = yield* a.acquire(run, "instance-a", 60)
          const [written] = yield* a.append(run, back.epoch, one(note("a 2")))
          assert.strictEqual(written?.seq, 4)
          assert.strictEqual((yield* a.verify(run)).seq, 4)
          assert.strictEqual((yield* a.read(run, 1)).length, 4)
        }),
      ).pipe(asFreshTenant))

    test("a run another instance sealed refuses a remembered head's append as RunSealed", () =>
      withSecond((b) =>
        Effect.gen(function* () {
          const a = yield* JournalStore
          const { run, epoch } = yield* leased("instance-a")
          yield* a.append(run, epoch, one(note("a 1")))
          yield* a.releaseLease(run, epoch)
          const taken = yield* b.acquire(run, "instance-b", 60)
          const sealedAt = yield* b.seal(run, taken.epoch, "succeeded")
          assertError(
            yield* Effect.flip(a.append(run, taken.epoch, one(note("after the seal")))),
            new RunSealed({ run, outcome: "succeeded" }),
          )
          assert.deepStrictEqual(yield* a.verify(run), { seq: 1, hash: sealedAt })
        }),
      ).pipe(asFreshTenant))

    test("a remembered head does not change which refusal comes first: a sealed run is RunSealed, a superseded epoch Fenced, even for an oversized batch", () =>
      withSecond((b) =>
        Effect.gen(function* () {
          const a = yield* JournalStore
          const huge = note("x".repeat(Journal.MAX_RECORD_BYTES + 1))
          const fenced = yield* leased("instance-a")
          yield* a.append(fenced.run, fenced.epoch, one(note("a 1")))
          yield* a.releaseLease(fenced.run, fenced.epoch)
          const taken = yield* b.acquire(fenced.run, "instance-b", 60)
          assertError(
            yield* Effect.flip(a.append(fenced.run, fenced.epoch, one(huge))),
            new Fenced({ run: fenced.run, held: fenced.epoch, current: taken.epoch }),
          )
          const sealed = yield* leased("instance-a")
          yield* a.append(sealed.run, sealed.epoch, one(note("a 1")))
          yield* b.seal(sealed.run, sealed.epoch, "succeeded")
          // A's read remembers the sealed run's head, so its next append would ride on it.
          yield* a.read(sealed.run, 1)
          assertError(
            yield* Effect.flip(a.append(sealed.run, sealed.epoch, one(huge))),
            new RunSealed({ run: sealed.run, outcome: "succeeded" }),
          )
          yield* a.read(sealed.run, 1)
          assertError(
            yield* Effect.flip(a.seal(sealed.run, sealed.epoch, "failed", one(huge))),
            new RunSealed({ run: sealed.run, outcome: "succeeded" }),
          )
        }),
      ).pipe(asFreshTenant))

    test.prop(
      "a holder's seal racing its own appends: nothing lands after the seal, each append lands before it or is RunSealed",
      shape,
      ({ fibers, pool }) =>
        Effect.gen(function* () {
          const store = yield* JournalStore
          const { run, epoch } = yield* leased()
          // Remembered from here on: every append below may ride on it.
          yield* store.append(run, epoch, one(note("first")))
          const [appends, sealedAt] = yield* Effect.all(
            [
              fire(fibers, (i) => Effect.either(store.append(run, epoch, one(note(`racer ${i}`))))),
              store.seal(run, epoch, "succeeded"),
            ],
            { concurrency: "unbounded" },
          )
          for (const r of appends) {
            if (r._tag === "Left") assertError(r.left, new RunSealed({ run, outcome: "succeeded" }))
          }
          const landed = appends.filter((r) => r._tag === "Right").length
          assert.deepStrictEqual(yield* store.verify(run), { seq: 1 + landed, hash: sealedAt })
        }).pipe(onPool(backend, pool)),
      runs,
    )
  })
}
