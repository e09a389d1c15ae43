/**
 * `append`'s options (`AppendOptions`): an opening append takes a new run's lease, claims its
 * admission key and meets the tenant's halt in the same commit; a guarded append or seal meets a
 * stored cancellation request. Each refusal writes nothing: no lease, no key, no record.
 */
import { describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import { Epoch, generateRunId } from "../../../src/domain/Ids.js"
import { Halted } from "../../../src/errors/QuotaError.js"
import { CancelPending, DuplicateAdmission, Fenced, LeaseHeld } from "../../../src/errors/StoreError.js"
import { JournalStore } from "../../../src/services/JournalStore.js"
import { QuotaStore } from "../../../src/services/QuotaStore.js"
import { assert } from "../../support/Assert.js"
import { asFreshTenant } from "../../support/Backend.js"
import { assertError } from "../../support/Errors.js"
import { admitted, concluded, leased, note, one, type Tester } from "./Fixtures.js"

const OPEN = { open: { owner: "worker-a", ttlSecs: 60 } } as const
const FIRST = Epoch.make(1)

/** Nothing of `run` is stored: no record, no lease to refuse an acquire, no activity. */
const nothingOf = (run: ReturnType<typeof generateRunId>) =>
  Effect.gen(function* () {
    const store = yield* JournalStore
    assert.strictEqual((yield* store.head(run)).seq, 0)
    assert.deepStrictEqual(
      (yield* store.recentRuns(Option.none(), 100)).filter((r) => r.run === run),
      [],
    )
    // An acquire of a run nobody leased gets the first epoch.
    assert.strictEqual((yield* store.acquire(run, "probe", 60)).epoch, 1)
  })

export const options = (test: Tester) => {
  describe("append options", () => {
    test("an opening append takes the lease at epoch 1 and writes the batch from seq 1", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const run = generateRunId()
          const written = yield* store.append(run, FIRST, [admitted("open-1"), note("first")], undefined, OPEN)
          assert.deepStrictEqual(
            written.map((r) => r.seq),
            [1, 2],
          )
          assert.deepStrictEqual(yield* store.admittedAs("open-1"), Option.some(run))
          // The lease is worker-a's, live: another acquirer is refused, and the holder appends on.
          const refused = yield* Effect.flip(store.acquire(run, "worker-b", 60))
          assert.strictEqual(refused._tag, "LeaseHeld")
          if (refused._tag === "LeaseHeld") assert.strictEqual(refused.owner, "worker-a")
          assert.strictEqual((yield* store.renew(run, "worker-a", FIRST, 60)).epoch, 1)
          yield* store.append(run, FIRST, one(note("second")))
          assert.strictEqual((yield* store.verify(run)).seq, 3)
        }),
      ))

    test("an opening append on a halted tenant is Halted and writes nothing", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const quotas = yield* QuotaStore
          const run = generateRunId()
          yield* quotas.setHalt(Option.some("incident 7"))
          const error = yield* Effect.flip(store.append(run, FIRST, [admitted("halted-1")], undefined, OPEN))
          assertError(error, new Halted({ tenant: error._tag === "Halted" ? error.tenant : "", reason: "incident 7" }))
          assert.deepStrictEqual(yield* store.admittedAs("halted-1"), Option.none())
          yield* nothingOf(run)
          // Lifted, the same opening goes through.
          yield* quotas.setHalt(Option.none())
          const other = generateRunId()
          assert.strictEqual((yield* store.append(other, FIRST, [admitted("halted-1")], undefined, OPEN)).length, 1)
        }),
      ))

    test("an opening append whose admission key is held is DuplicateAdmission naming the holder, and writes nothing", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const holder = generateRunId()
          yield* store.append(holder, FIRST, [admitted("dup-1")], undefined, OPEN)
          const run = generateRunId()
          const error = yield* Effect.flip(store.append(run, FIRST, [admitted("dup-1"), note("x")], undefined, OPEN))
          assertError(error, new DuplicateAdmission({ key: "dup-1", run: holder }))
          yield* nothingOf(run)
        }),
      ))

    test("an opening append of a run that has a lease is LeaseHeld and writes nothing", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const { run } = yield* leased("worker-z")
          const error = yield* Effect.flip(store.append(run, FIRST, [admitted("held-1")], undefined, OPEN))
          assert.strictEqual(error._tag, "LeaseHeld")
          if (error._tag === "LeaseHeld")
            assertError(error, new LeaseHeld({ run, owner: "worker-z", epoch: 1, remainingSecs: error.remainingSecs }))
          assert.strictEqual((yield* store.head(run)).seq, 0)
          assert.deepStrictEqual(yield* store.admittedAs("held-1"), Option.none())
        }),
      ))

    test("an opening append names epoch 1: any other is Fenced and writes nothing", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const run = generateRunId()
          const error = yield* Effect.flip(store.append(run, Epoch.make(2), [admitted()], undefined, OPEN))
          assertError(error, new Fenced({ run, held: 2, current: 0 }))
          yield* nothingOf(run)
        }),
      ))

    test("a guarded append over a stored cancellation request is CancelPending and writes nothing", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const { run, epoch } = yield* leased()
          yield* store.append(run, epoch, one(note("before")))
          // Unguarded, or guarded with no request, the batch goes.
          yield* store.append(run, epoch, one(note("guarded, no request")), undefined, { guardCancel: true })
          yield* store.requestCancel(run, "operator:ann", "withdrawn")
          const error = yield* Effect.flip(
            store.append(run, epoch, [note("boundary"), note("announce")], undefined, { guardCancel: true }),
          )
          assertError(error, new CancelPending({ run, actor: "operator:ann", reason: "withdrawn" }))
          assert.strictEqual((yield* store.head(run)).seq, 2)
          // The request does not fence the run: its unguarded records (the cancellation) still go.
          yield* store.append(run, epoch, one(note("RunCancelled stands here")))
          assert.strictEqual((yield* store.verify(run)).seq, 3)
        }),
      ))

    test("a guarded seal over a stored request is CancelPending and seals nothing; unguarded it seals", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const { run, epoch } = yield* leased()
          yield* store.requestCancel(run, "operator:ann", "withdrawn")
          const error = yield* Effect.flip(
            store.seal(run, epoch, "succeeded", [note("last"), concluded("succeeded")], undefined, {
              guardCancel: true,
            }),
          )
          assertError(error, new CancelPending({ run, actor: "operator:ann", reason: "withdrawn" }))
          assert.strictEqual((yield* store.head(run)).seq, 0)
          yield* store.seal(run, epoch, "cancelled", [concluded("cancelled")])
          assert.deepStrictEqual(yield* store.runsByOutcome("cancelled", 10), [run])
        }),
      ))

    test("a guarded opening append of a run its own steps asked to cancel is CancelPending and writes nothing", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const run = generateRunId()
          yield* store.requestCancel(run, "operator:ann", "before it was written")
          const error = yield* Effect.flip(
            store.append(run, FIRST, [admitted("early-1")], undefined, { ...OPEN, guardCancel: true }),
          )
          assertError(error, new CancelPending({ run, actor: "operator:ann", reason: "before it was written" }))
          assert.deepStrictEqual(yield* store.admittedAs("early-1"), Option.none())
          yield* nothingOf(run)
        }),
      ))
  })
}
