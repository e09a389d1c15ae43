/**
 * Regression tests for the two defects the fault battery found, PostgreSQL only (the cut is a
 * trigger that terminates the backend; see test/support/Faults.ts): a terminated connection went
 * back to the pool looking healthy, so the verb after the faulted one failed too.
 */
import { randomBytes } from "node:crypto"
import { describe, layer } from "@effect/vitest"
import { Effect, Option } from "effect"
import { inject } from "vitest"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import { EffectKey } from "../../src/domain/EffectKey.js"
import { Subscription } from "../../src/domain/Event.js"
import { generateRunId, StepId } from "../../src/domain/Ids.js"
import * as Time from "../../src/domain/Time.js"
import { CaseStore } from "../../src/services/CaseStore.js"
import { EventStore } from "../../src/services/EventStore.js"
import { assert } from "../support/Assert.js"
import { asFreshTenant } from "../support/Backend.js"
import * as Faults from "../support/Faults.js"

const at = (seconds: number) => Time.Timestamp.make(seconds)
const keys = [CorrelationKey.make("a", "1")]

/** Several verbs right after the fault, each drawing a connection: none may draw the dead one. */
const nextVerbsWork = Effect.flatMap(CaseStore, (store) =>
  Effect.all(
    Array.from({ length: 8 }, () => Effect.either(store.correlate(keys))),
    { concurrency: "unbounded" },
  ),
).pipe(Effect.map((answers) => assert.deepStrictEqual(answers.filter((a) => a._tag === "Left").length, 0)))

const commitKilled = Effect.gen(function* () {
  const store = yield* CaseStore
  const opened = yield* store.correlateOrOpen("claim", keys, at(1_000))
  yield* Faults.inject(Faults.atCommit("case_runs", "INSERT"), "self", store.attachRun(opened.case, generateRunId()))
  yield* nextVerbsWork
})

describe("faults: the pool after a terminated connection", () => {
  layer(Faults.layer(inject("pgUrl")), { excludeTestServices: true })((it) => {
    it.effect("a connection killed inside COMMIT fails its own verb only", () => asFreshTenant(commitKilled))

    it.effect("a connection killed inside a single-statement verb fails that verb only", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          const sub = new Subscription({
            run: generateRunId(),
            case: Option.none(),
            effect: EffectKey.make(randomBytes(32).toString("hex")),
            step: StepId.make(1),
            phase: "forward",
            kind: "reply",
            correlation: keys,
          })
          yield* Faults.inject(Faults.after("subscriptions", "INSERT"), "self", store.subscribe(sub, at(1_000)))
          yield* nextVerbsWork
        }),
      ),
    )
  })
})
