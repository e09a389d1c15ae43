/**
 * A seal's alongside: another store's write that commits with the seal, all or nothing. A timer's
 * disarm (a wake-up's release) carries its form (`JournalStore.Form`), so pg folds it into the
 * seal's one statement on a remembered head instead of running it; every backend must keep the
 * same settlement either way: the timer is gone exactly when the seal committed, and whoever
 * wrapped the alongside learns that it committed, once.
 */
import { describe } from "@effect/vitest"
import { Context, Effect, Layer, Option } from "effect"
import { generateRunId, StepId } from "../../../src/domain/Ids.js"
import { Timer } from "../../../src/domain/Timer.js"
import { Fenced } from "../../../src/errors/StoreError.js"
import { type Alongside, JournalStore, withForm } from "../../../src/services/JournalStore.js"
import { TimerStore } from "../../../src/services/TimerStore.js"
import { assert } from "../../support/Assert.js"
import { asFreshTenant, type Backend } from "../../support/Backend.js"
import { assertError } from "../../support/Errors.js"
import { effectKey, leased, note, one, type Tester } from "./Fixtures.js"

export const alongside = (test: Tester, backend: Backend) => {
  describe("alongside", () => {
    test("a seal on a remembered head with its timer's disarm drops the timer in the same commit and tells the wrapper once", () =>
      Effect.gen(function* () {
        const store = yield* JournalStore
        const timers = yield* TimerStore
        const { run, epoch } = yield* leased("instance-a")
        const key = effectKey()
        yield* timers.arm(armed(run, key))
        // The append leaves the head remembered (pg), so the seal below takes the one-statement way.
        yield* store.append(run, epoch, one(note("before the seal")))
        const told = { ran: 0, folded: 0 }
        const sealed = yield* store.seal(
          run,
          epoch,
          "succeeded",
          [note("last")],
          wrapped(timers.disarm(run, key), told),
        )
        assert.deepStrictEqual(yield* store.verify(run), { seq: 2, hash: sealed })
        assert.strictEqual(yield* timers.pendingCount(), 0)
        assert.strictEqual(told.ran + told.folded, 1, "the alongside ran or was folded, exactly once")
        // pg folds it (the seal and the drop are one statement); the others run it.
        assert.deepStrictEqual(told, backend.name === "postgres" ? { ran: 0, folded: 1 } : { ran: 1, folded: 0 })
        // The seal released the lease with it, folded or not.
        assert.strictEqual((yield* store.acquire(run, "instance-b", 60)).epoch, epoch + 1)
      }).pipe(asFreshTenant))

    test("a fenced seal with its timer's disarm writes nothing: the timer stays armed", () =>
      Effect.scoped(
        Effect.gen(function* () {
          const context = yield* Layer.build(backend.pooled(2))
          const b = Context.get(context, JournalStore)
          const a = yield* JournalStore
          const timers = yield* TimerStore
          const { run, epoch } = yield* leased("instance-a")
          const key = effectKey()
          yield* timers.arm(armed(run, key))
          yield* a.append(run, epoch, one(note("a 1")))
          yield* a.releaseLease(run, epoch)
          const taken = yield* b.acquire(run, "instance-b", 60)
          const told = { ran: 0, folded: 0 }
          assertError(
            yield* Effect.flip(
              a.seal(run, epoch, "succeeded", [note("a's last")], wrapped(timers.disarm(run, key), told)),
            ),
            new Fenced({ run, held: epoch, current: taken.epoch }),
          )
          assert.strictEqual(yield* timers.pendingCount(), 1)
          assert.strictEqual(told.folded, 0, "a seal that wrote nothing folded nothing")
          assert.strictEqual((yield* a.verify(run)).seq, 1)
        }),
      ).pipe(asFreshTenant))

    test("a seal with another run's timer disarm alongside drops that timer, not one of the sealed run's", () =>
      Effect.gen(function* () {
        const store = yield* JournalStore
        const timers = yield* TimerStore
        const { run, epoch } = yield* leased("instance-a")
        const other = generateRunId()
        const key = effectKey()
        // The sealed run has a timer under the same effect key: only the other run's may go.
        yield* timers.arm(armed(run, key))
        yield* timers.arm(armed(other, key))
        yield* store.append(run, epoch, one(note("before the seal")))
        yield* store.seal(run, epoch, "succeeded", [note("last")], timers.disarm(other, key))
        const left = yield* timers.pending(10)
        assert.deepStrictEqual(
          left.map((t) => t.run),
          [run],
        )
      }).pipe(asFreshTenant))
  })
}

/** A due timer of `run` under `effect`. */
const armed = (run: ReturnType<typeof generateRunId>, effect: ReturnType<typeof effectKey>) =>
  new Timer({ run, case: Option.none(), effect, step: StepId.make(0), phase: "forward", fireAt: 1 as Timer["fireAt"] })

/** `release` wrapped as the runtime's writer wraps it: counting a run, and a fold, keeping the form. */
const wrapped = (release: Alongside, told: { ran: number; folded: number }): Alongside => {
  const counted = Effect.tap(
    release,
    Effect.sync(() => {
      told.ran += 1
    }),
  )
  const form = release.form
  return form === undefined
    ? counted
    : withForm(counted, {
        form: form.form,
        folded: Effect.zipRight(
          form.folded,
          Effect.sync(() => {
            told.folded += 1
          }),
        ),
      })
}
