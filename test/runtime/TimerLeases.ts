/**
 * A timer pass's leases (§7.10 pass 5, issue 16 C): the pass takes its whole batch's leases in
 * one `acquireMany`, before any wake-up has one of the `wakeConcurrency` permits, so a wake-up
 * queued behind a long run holds its run's lease while it waits. The pass renews that lease
 * meanwhile (unrenewed, it lapsed and another owner resumed the run beside its live owner), and
 * gives it back the moment the pass ends with the wake-up not started (kept, the run waited out
 * the TTL for nothing). Here one permit is held by the first woken run, blocked in its act, and
 * the second run's wake-up queues behind it; another owner tries the second run's lease.
 */
import { describe, it } from "@effect/vitest"
import { Deferred, Effect, Either, Fiber, Schedule, Schema } from "effect"
import { expect } from "vitest"
import type { RunId } from "../../src/domain/Ids.js"
import * as Run from "../../src/domain/Run.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import { TimerStore } from "../../src/services/TimerStore.js"
import * as Backend from "../support/Backend.js"
import * as Support from "./Support.js"

const OWNER = "timer-pass"
const INTRUDER = "another-instance"
/**
 * Renewed every third of it (2 s), a lease of 6 lives at least 5 s past each renewal (whole
 * seconds), so only a renewal 3 s late lets it lapse. 3 is the shortest TTL that holds at all
 * (a 1 s lease lapses before its first renewal, a 2 s one whenever a renewal and the statement
 * after it cross two second boundaries), but there a renewal 1 s late, a stall a loaded CI
 * machine can have, would lapse it.
 */
const TTL = 6

/** Two sleepers whose acts (counted per run's `n`) block until `latch` opens, one permit between them. */
const setup = (backend: Backend.Backend, ttl: number) =>
  Effect.gen(function* () {
    const counter = new Support.Counter()
    const latch = yield* Deferred.make<void>()
    const act = Support.acting("timerlease.act", { mutates: true, recovery: Run.Recovery.Retry() }, (n) =>
      Effect.zipRight(
        Effect.sync(() => counter.bump(`act:${n}`)),
        Effect.as(Deferred.await(latch), { ok: "act", n }),
      ),
    )
    const def = Support.sleepThenAct("timerlease.sleep", act, Schema.Struct({ n: Schema.Number }), (i) => i.n)
    const live = Support.runtime(backend, [def], { owner: OWNER, leaseTtlSecs: ttl, wakeConcurrency: 1 })
    return { counter, latch, def, live }
  })

/** Another owner's acquire of `run`'s lease: `Left` is the refusal, `Right` a lease it took. */
const intrude = (run: RunId, ttl: number) =>
  Effect.flatMap(JournalStore, (j) =>
    Effect.either(j.acquire(run, INTRUDER, ttl).pipe(Effect.catchTags({ Backend: Effect.die, Corrupt: Effect.die }))),
  )

/**
 * Admits two sleepers, forks a timer pass and waits until one of them is blocked in its act,
 * holding the only permit: the pass is then held on the other's permit, its lease taken.
 */
const queueSecond = (s: Effect.Effect.Success<ReturnType<typeof setup>>) =>
  Effect.gen(function* () {
    const rt = yield* Runtime.Runtime
    const runs = yield* Effect.forEach([1, 2], (n) => rt.run(s.def, Run.labeled({ n }, "test")))
    for (const r of runs) expect(r.status._tag).toBe("Suspended")
    const pass = yield* Effect.fork(rt.fireTimers(128))
    const acting = yield* Effect.suspend(() => {
      const started = [1, 2].filter((n) => s.counter.get(`act:${n}`) > 0)
      return started.length === 1 ? Effect.succeed(started[0] as number) : Effect.fail("no act started yet")
    }).pipe(Effect.retry(Schedule.spaced("20 millis").pipe(Schedule.upTo("10 seconds"))), Effect.orDie)
    const holder = runs[acting - 1]
    const queued = runs[2 - acting]
    if (holder === undefined || queued === undefined) return expect.fail("two runs admitted")
    return { pass, holder: { run: holder.run, n: acting }, queued: { run: queued.run, n: 3 - acting } }
  })

const sealedOnce = (run: RunId) =>
  Effect.map(Support.journalOf(run), (records) => Support.ofKind(records, "RunSealed").map((s) => s.kind.outcome))

export const suite = (backend: Backend.Backend) =>
  describe("timer pass leases", () => {
    it.live("a granted lease whose wake-up queues for the permit is renewed past its TTL; both runs seal once", () =>
      Effect.gen(function* () {
        const s = yield* setup(backend, TTL)
        yield* Support.on(s.live)(
          Effect.gen(function* () {
            const rt = yield* Runtime.Runtime
            const q = yield* queueSecond(s)
            const first = yield* intrude(q.queued.run, TTL)
            if (Either.isRight(first)) return expect.fail("the queued run's lease was not taken by the pass")
            expect(first.left).toMatchObject({ _tag: "LeaseHeld", owner: OWNER })
            // Over two TTLs another owner keeps finding the lease held by the pass, at one epoch:
            // never lapsed, never taken over.
            const probes = yield* Effect.forEach(Array.from({ length: 8 }), () =>
              Effect.zipRight(Effect.sleep(`${Math.ceil((TTL * 1000) / 4) + 50} millis`), intrude(q.queued.run, TTL)),
            )
            for (const p of probes) {
              expect(Either.isLeft(p) && p.left).toMatchObject({
                _tag: "LeaseHeld",
                owner: OWNER,
                epoch: first.left.epoch,
              })
            }
            expect(s.counter.get(`act:${q.queued.n}`)).toBe(0)
            yield* Deferred.succeed(s.latch, undefined)
            const fired = yield* Fiber.join(q.pass)
            expect(fired.fired).toBe(2)
            yield* rt.idle
            for (const r of [q.holder, q.queued]) {
              expect(yield* sealedOnce(r.run)).toEqual(["succeeded"])
              expect(s.counter.get(`act:${r.n}`)).toBe(1)
            }
          }),
        )
      }).pipe(Backend.asFreshTenant),
    )

    it.live("an interrupted pass gives back at once the leases of wake-ups that had not started", () =>
      Effect.gen(function* () {
        // A long TTL: what the other owner gets right after the interruption is a given-back lease, never a lapsed one.
        const ttl = 30
        const s = yield* setup(backend, ttl)
        yield* Support.on(s.live)(
          Effect.gen(function* () {
            const rt = yield* Runtime.Runtime
            const journal = yield* JournalStore
            const q = yield* queueSecond(s)
            const held = yield* intrude(q.queued.run, ttl)
            if (Either.isRight(held)) return expect.fail("the queued run's lease was not taken by the pass")
            expect(held.left).toMatchObject({ _tag: "LeaseHeld", owner: OWNER })
            yield* Fiber.interrupt(q.pass)
            const taken = yield* intrude(q.queued.run, ttl)
            if (Either.isLeft(taken)) return expect.fail(`the lease was kept: ${JSON.stringify(taken.left)}`)
            expect(taken.right.epoch).toBe(held.left.epoch + 1)
            yield* journal.releaseLease(q.queued.run, taken.right.epoch)
            // The started wake-up is not the pass's to stop or give back: it keeps its lease and
            // runs on to its seal.
            const kept = yield* intrude(q.holder.run, ttl)
            expect(Either.isLeft(kept) && kept.left).toMatchObject({ _tag: "LeaseHeld", owner: OWNER })
            yield* Deferred.succeed(s.latch, undefined)
            yield* rt.idle
            expect(yield* sealedOnce(q.holder.run)).toEqual(["succeeded"])
            expect(s.counter.get(`act:${q.queued.n}`)).toBe(0)
            const pending = yield* Effect.flatMap(TimerStore, (t) => t.pending(10_000))
            expect(pending.some((t) => t.run === q.queued.run)).toBe(true)
            // Its timer is still armed: a later pass, past the interrupted one's claim, wakes it once.
            const clock = yield* Effect.clock
            const again = yield* Effect.withClock(rt.fireTimers(128), Support.clockAhead(clock, 120))
            expect(again.fired).toBe(1)
            yield* rt.idle
            for (const r of [q.holder, q.queued]) {
              expect(yield* sealedOnce(r.run)).toEqual(["succeeded"])
              expect(s.counter.get(`act:${r.n}`)).toBe(1)
            }
          }),
        )
      }).pipe(Backend.asFreshTenant),
    )
  })
