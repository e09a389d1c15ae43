/**
 * The memory LogStore's integration interrupted at any point: a fiber is the memory store's only
 * way to die, so "a kill at each integration write" is an integrate fiber interrupted after any
 * number of scheduler turns (before it starts, while its body runs, after it ended), or losing a
 * race to a turn of the scheduler, while a second caller integrates the same tenant
 * concurrently and runs are sealed in between.
 *
 * Proven, as a property over random waves of two callers (each joined, interrupted after 0–3
 * yields, or raced), of random batch sizes, with seals landing while they run: after every wave
 * the log holds a prefix of the sealed runs in seal order exactly once (`LogChecks.assertExactlyOnce`:
 * the root over that prefix, every run's inclusion at its position, every checkpoint consistent
 * with the latest); the size only grows; a caller that answered took in exactly the leaves it
 * said; and a last healthy integration takes in every run. Should integration ever be split
 * across fiber turns (an `await` between moving the size and storing the subtrees, say), an
 * interruption landing between them would show here as a missing subtree or a root over
 * another history.
 */
import { describe } from "@effect/vitest"
import { Effect, Exit, FastCheck, Fiber, Option } from "effect"
import { JournalStore } from "../../src/services/JournalStore.js"
import { LogStore } from "../../src/services/LogStore.js"
import { deploymentKey, NOW, type Sealed, sealed } from "../conformance/log/Fixtures.js"
import { assert } from "../support/Assert.js"
import * as Backend from "../support/Backend.js"
import { assertExactlyOnce } from "./LogChecks.js"

/** How one caller's integration ends: joined, interrupted after `yields` turns, or raced against one turn. */
const Ending = FastCheck.oneof(
  FastCheck.constant({ end: "join" as const }),
  FastCheck.record({ end: FastCheck.constant("interrupt" as const), yields: FastCheck.integer({ min: 0, max: 3 }) }),
  FastCheck.constant({ end: "race" as const }),
)

const Caller = FastCheck.record({ max: FastCheck.integer({ min: 1, max: 6 }), ending: Ending })

/** Two callers started together, and the runs sealed (by the test's fiber) while they run. */
const Wave = FastCheck.record({
  callers: FastCheck.tuple(Caller, Caller),
  seals: FastCheck.integer({ min: 0, max: 4 }),
})

describe("faults: LogStore interrupted in memory", () => {
  Backend.battery(Backend.memory(), (test) => {
    test.prop(
      "integrations interrupted anywhere, beside a second caller, integrate each leaf once",
      [FastCheck.integer({ min: 0, max: 12 }), FastCheck.array(Wave, { minLength: 1, maxLength: 10 })],
      ([backlog, waves]) =>
        Backend.asFreshTenant(
          Effect.gen(function* () {
            const store = yield* JournalStore
            const log = yield* LogStore
            const { key } = deploymentKey()
            const runs: Array<Sealed> = []
            for (let i = 0; i < backlog; i++) runs.push(yield* sealed(store, runs.length))
            let size = 0
            for (const wave of waves) {
              const fibers = yield* Effect.forEach(wave.callers, (caller) =>
                Effect.fork(
                  caller.ending.end === "race"
                    ? Effect.race(
                        Effect.map(log.integrate(key, NOW, caller.max), Option.some),
                        Effect.as(Effect.yieldNow(), Option.none()),
                      )
                    : Effect.map(log.integrate(key, NOW, caller.max), Option.some),
                ),
              )
              for (let i = 0; i < wave.seals; i++) runs.push(yield* sealed(store, runs.length))
              const answers = yield* Effect.forEach(wave.callers, (caller, i) =>
                Effect.gen(function* () {
                  const fiber = fibers[i] as Fiber.RuntimeFiber<
                    Option.Option<{ leaves: number; size: number }>,
                    unknown
                  >
                  if (caller.ending.end === "interrupt") {
                    for (let y = 0; y < caller.ending.yields; y++) yield* Effect.yieldNow()
                    return Exit.match(yield* Fiber.interrupt(fiber), {
                      onFailure: () => Option.none(),
                      onSuccess: (answer) => answer,
                    })
                  }
                  return yield* Fiber.join(fiber)
                }),
              )
              const latest = yield* assertExactlyOnce(runs)
              const now = Option.match(latest, { onNone: () => 0, onSome: (cp) => cp.size })
              assert.isTrue(now >= size, `the log shrank from ${size} to ${now}`)
              // A caller that answered moved the size by what it said, from where it found it.
              for (const answer of answers)
                if (Option.isSome(answer)) {
                  assert.isTrue(answer.value.size <= now, `an answer of size ${answer.value.size} past ${now}`)
                  const { leaves, size: to } = answer.value
                  if (leaves > 0) {
                    const from = to - leaves
                    assert.isTrue(
                      Option.isSome(yield* log.checkpointAt(to)),
                      `no checkpoint at ${to}, a caller's answer`,
                    )
                    assert.isTrue(
                      from === 0 || Option.isSome(yield* log.checkpointAt(from)),
                      `no checkpoint at ${from}, where a caller that took ${leaves} to ${to} found the log`,
                    )
                  }
                }
              size = now
            }
            const rest = yield* log.integrate(key, NOW, 1_000)
            assert.deepStrictEqual(rest, { leaves: runs.length - size, size: runs.length })
            yield* assertExactlyOnce(runs)
          }),
        ),
      { fastCheck: { numRuns: 100 } },
    )
  })
})
