/**
 * §6.4 `acquireMany`: a timer batch's leases in one statement, each run claimed exactly as
 * `acquire` claims it. Expiry sleeps past a 1-second TTL on the backend's clock.
 */
import { describe } from "@effect/vitest"
import { Effect } from "effect"
import { generateRunId, type RunId } from "../../../src/domain/Ids.js"
import { Fenced } from "../../../src/errors/StoreError.js"
import { JournalStore } from "../../../src/services/JournalStore.js"
import { assert } from "../../support/Assert.js"
import { asFreshTenant, type Backend, onPool } from "../../support/Backend.js"
import { assertError } from "../../support/Errors.js"
import { fire, runs, shape } from "../../support/Races.js"
import { note, one, type Tester } from "./Fixtures.js"

const nowSecs = () => Math.floor(Date.now() / 1000)

/** (run, owner, epoch) of each lease, by run: `acquireMany` answers in no particular order. */
const byRun = (leases: ReadonlyArray<{ readonly run: RunId; readonly owner: string; readonly epoch: number }>) =>
  [...leases].sort((a, b) => (a.run < b.run ? -1 : a.run > b.run ? 1 : 0)).map((l) => [l.run, l.owner, l.epoch])

export const acquireMany = (test: Tester, backend: Backend) => {
  describe("acquireMany", () => {
    test("grants free and released runs at their next epoch; a live lease, even the caller's own, is absent", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const [free, held, released] = [generateRunId(), generateRunId(), generateRunId()]
          yield* store.acquire(held, "worker-a", 60)
          const first = yield* store.acquire(released, "worker-b", 60)
          yield* store.releaseLease(released, first.epoch)
          // Named twice, counted once.
          const granted = yield* store.acquireMany([released, free, held, free], "worker-a", 60)
          assert.deepStrictEqual(
            byRun(granted),
            byRun([
              { run: free, owner: "worker-a", epoch: 1 },
              { run: released, owner: "worker-a", epoch: 2 },
            ]),
          )
          for (const l of granted) assert.isTrue(Math.abs(l.expiresAt - (nowSecs() + 60)) <= 3)
          // What it grants is a lease like any other: it fences the epoch before it, and holds.
          assertError(
            yield* Effect.flip(store.append(released, first.epoch, one(note("stale")))),
            new Fenced({ run: released, held: 1, current: 2 }),
          )
          assert.strictEqual((yield* store.append(released, 2 as never, one(note("new holder"))))[0]?.seq, 1)
          assert.strictEqual((yield* Effect.flip(store.acquire(free, "worker-b", 60)))._tag, "LeaseHeld")
        }),
      ))

    test("no runs grant nothing", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          assert.deepStrictEqual(yield* store.acquireMany([], "worker-a", 60), [])
        }),
      ))

    test("an expired lease is granted to another owner at the next epoch", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const run = generateRunId()
          // 2 s: expiry is the backend's whole second plus the TTL, so a TTL of 1 could lapse at the
          // next second boundary, between these two statements; 2 holds at least 1 s and is gone by 2.1.
          yield* store.acquire(run, "worker-a", 2)
          assert.deepStrictEqual(yield* store.acquireMany([run], "worker-b", 60), [])
          yield* Effect.sleep("2100 millis")
          const granted = yield* store.acquireMany([run], "worker-b", 60)
          assert.deepStrictEqual(
            granted.map((l) => [l.run, l.owner, l.epoch]),
            [[run, "worker-b", 2]],
          )
        }),
      ))

    test.prop(
      "N callers acquiring overlapping sets: each run is granted to exactly one, its epoch bumped by exactly one",
      shape,
      ({ fibers, pool }) =>
        Effect.gen(function* () {
          const store = yield* JournalStore
          const all = Array.from({ length: 6 }, () => generateRunId())
          // Each caller names four of the six, starting at its own offset and in its own order,
          // so the sets overlap and no two callers list the shared runs alike.
          const setOf = (i: number) => {
            const picked = [0, 1, 2, 3].map((k) => all[(i + k) % all.length] as RunId)
            return i % 2 === 0 ? picked : picked.reverse()
          }
          const round = (epoch: number) =>
            Effect.gen(function* () {
              const results = yield* fire(fibers, (i) => store.acquireMany(setOf(i), `worker-${i}`, 60))
              const named = new Set(Array.from({ length: fibers }, (_, i) => setOf(i)).flat())
              for (const run of named) {
                const grants = results.flatMap((leases, i) =>
                  leases.filter((l) => l.run === run).map((l) => ({ ...l, caller: i })),
                )
                assert.strictEqual(grants.length, 1, `run ${run} granted ${grants.length} times`)
                const [g] = grants
                assert.strictEqual(g?.epoch, epoch)
                assert.strictEqual(g?.owner, `worker-${g?.caller}`)
                assert.isTrue(setOf(g?.caller ?? -1).includes(run))
              }
              return results.flat()
            })
          const first = yield* round(1)
          for (const l of first) yield* store.releaseLease(l.run, l.epoch)
          // Released, every run is free again: the next race bumps each by exactly one more.
          yield* round(2)
        }).pipe(onPool(backend, pool)),
      runs,
    )
  })
}
