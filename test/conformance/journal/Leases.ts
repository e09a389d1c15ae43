/**
 * §6.4: leases on the backend's clock. Expiry tests sleep past a 1-second TTL: the clock they
 * wait on is the database's, which no TestClock moves.
 */
import { describe } from "@effect/vitest"
import { Effect } from "effect"
import { Epoch, generateRunId } from "../../../src/domain/Ids.js"
import { Fenced, LeaseHeld, LeaseNotHeld } from "../../../src/errors/StoreError.js"
import { JournalStore } from "../../../src/services/JournalStore.js"
import { assert } from "../../support/Assert.js"
import { asFreshTenant } from "../../support/Backend.js"
import { assertError } from "../../support/Errors.js"
import { note, one, type Tester } from "./Fixtures.js"

const nowSecs = () => Math.floor(Date.now() / 1000)

/** The backend clock is this machine's (pg: the local server), give or take scheduling. */
const near = (actual: number, expected: number) =>
  assert.isTrue(Math.abs(actual - expected) <= 3, `${actual} is not within 3 s of ${expected}`)

export const leases = (test: Tester) => {
  describe("acquire", () => {
    test("a run with no lease is claimed at epoch 1, expiring ttl seconds from the backend's now", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const run = generateRunId()
          const lease = yield* store.acquire(run, "worker-a", 60)
          assert.deepStrictEqual([lease.run, lease.owner, lease.epoch], [run, "worker-a", 1])
          near(lease.expiresAt, nowSecs() + 60)
        }),
      ))

    test("a live lease is LeaseHeld, even for the same owner", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const run = generateRunId()
          yield* store.acquire(run, "worker-a", 60)
          for (const owner of ["worker-a", "worker-b"]) {
            const e = yield* Effect.flip(store.acquire(run, owner, 60))
            assert.strictEqual(e._tag, "LeaseHeld")
            if (e._tag !== "LeaseHeld") return
            near(e.remainingSecs, 60)
            assertError(e, new LeaseHeld({ run, owner: "worker-a", epoch: 1, remainingSecs: e.remainingSecs }))
          }
        }),
      ))

    test("a released lease is claimed again at the next epoch, fencing the old one", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const run = generateRunId()
          const first = yield* store.acquire(run, "worker-a", 60)
          yield* store.releaseLease(run, first.epoch)
          const second = yield* store.acquire(run, "worker-b", 60)
          assert.deepStrictEqual([second.owner, second.epoch], ["worker-b", 2])
          assertError(
            yield* Effect.flip(store.append(run, first.epoch, one(note("stale")))),
            new Fenced({ run, held: 1, current: 2 }),
          )
        }),
      ))
  })

  describe("renew", () => {
    test("the exact holder extends its live lease and keeps the epoch", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const run = generateRunId()
          const lease = yield* store.acquire(run, "worker-a", 5)
          const renewed = yield* store.renew(run, "worker-a", lease.epoch, 600)
          assert.deepStrictEqual([renewed.owner, renewed.epoch], ["worker-a", 1])
          near(renewed.expiresAt, nowSecs() + 600)
        }),
      ))

    test("another owner, another epoch, a released lease or no lease is LeaseNotHeld", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const run = generateRunId()
          const lease = yield* store.acquire(run, "worker-a", 60)
          assertError(
            yield* Effect.flip(store.renew(run, "worker-b", lease.epoch, 60)),
            new LeaseNotHeld({ run, epoch: 1 }),
          )
          assertError(
            yield* Effect.flip(store.renew(run, "worker-a", Epoch.make(2), 60)),
            new LeaseNotHeld({ run, epoch: 2 }),
          )
          yield* store.releaseLease(run, lease.epoch)
          assertError(
            yield* Effect.flip(store.renew(run, "worker-a", lease.epoch, 60)),
            new LeaseNotHeld({ run, epoch: 1 }),
          )
          const none = generateRunId()
          assertError(
            yield* Effect.flip(store.renew(none, "worker-a", Epoch.make(1), 60)),
            new LeaseNotHeld({ run: none, epoch: 1 }),
          )
        }),
      ))
  })

  describe("releaseLease", () => {
    test("frees the current lease; a repeat and a stale epoch quietly do nothing", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const run = generateRunId()
          const first = yield* store.acquire(run, "worker-a", 60)
          yield* store.releaseLease(run, first.epoch)
          yield* store.releaseLease(run, first.epoch)
          const second = yield* store.acquire(run, "worker-b", 60)
          // The holder of epoch 1 cannot free epoch 2's lease.
          yield* store.releaseLease(run, first.epoch)
          const e = yield* Effect.flip(store.acquire(run, "worker-c", 60))
          assert.strictEqual(e._tag, "LeaseHeld")
          if (e._tag === "LeaseHeld") assert.deepStrictEqual([e.owner, e.epoch], ["worker-b", second.epoch])
          yield* store.releaseLease(generateRunId(), Epoch.make(1))
        }),
      ))
  })

  describe("expiry", () => {
    test("an expired lease: not renewable, still appendable by its epoch, abandoned, then acquired higher", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const early = generateRunId()
          const late = generateRunId()
          const released = generateRunId()
          const live = generateRunId()
          const a = yield* store.acquire(early, "worker-a", 1)
          yield* store.acquire(late, "worker-b", 2)
          const r = yield* store.acquire(released, "worker-c", 1)
          yield* store.releaseLease(released, r.epoch)
          yield* store.acquire(live, "worker-d", 600)
          yield* Effect.sleep("3100 millis")
          assertError(
            yield* Effect.flip(store.renew(early, "worker-a", a.epoch, 60)),
            new LeaseNotHeld({ run: early, epoch: 1 }),
          )
          // Earliest expiry first; released and live leases are not abandoned.
          assert.deepStrictEqual(yield* store.abandonedRuns(10), [early, late])
          assert.deepStrictEqual(yield* store.abandonedRuns(1), [early])
          assert.deepStrictEqual(yield* store.abandonedRuns(0), [])
          // Only a newer acquire fences a writer, not the lapse of its TTL.
          const [rec] = yield* store.append(early, a.epoch, one(note("after expiry")))
          assert.strictEqual(rec?.seq, 1)
          const next = yield* store.acquire(early, "worker-e", 60)
          assert.deepStrictEqual([next.owner, next.epoch], ["worker-e", 2])
          assert.deepStrictEqual(yield* store.abandonedRuns(10), [late])
          assertError(
            yield* Effect.flip(store.append(early, a.epoch, one(note("fenced")))),
            new Fenced({ run: early, held: 1, current: 2 }),
          )
        }),
      ))
  })
}
