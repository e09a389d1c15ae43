/**
 * The test runtime a user's own tests build on: fakes stand in for an effect kind's act, a crash
 * at a named boundary stops a run as a dead process would, and TestClock moves the lease past its
 * expiry so a second runtime over the same stores resumes it.
 */
import { describe, it } from "@effect/vitest"
import { Effect, Layer, Option, Schema, TestClock } from "effect"
import { expect } from "vitest"
import * as Run from "../../src/domain/Run.js"
import { Tenant, TenantId } from "../../src/domain/Tenant.js"
import * as MemoryBackend from "../../src/layers/memory/MemoryBackend.js"
import * as EffectKind from "../../src/runtime/EffectKind.js"
import * as RunDefinition from "../../src/runtime/RunDefinition.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import * as Step from "../../src/runtime/Step.js"
import { StepCtx } from "../../src/runtime/StepCtx.js"
import * as TestRuntime from "../../src/testing/TestRuntime.js"

const real = { charge: 0, ship: 0 }

const charge = EffectKind.make({
  kind: "shop.charge",
  args: Schema.Struct({ amount: Schema.Number }),
  success: Schema.Struct({ id: Schema.String }),
  mutates: true,
  recovery: Run.Recovery.Idempotent({ key: Option.none() }),
  act: () =>
    Effect.sync(() => {
      real.charge += 1
      return { id: "real" }
    }),
})

const ship = EffectKind.make({
  kind: "shop.ship",
  args: Schema.Struct({ charge: Schema.String }),
  success: Schema.Struct({ parcel: Schema.String }),
  mutates: true,
  recovery: Run.Recovery.Retry(),
  act: ({ charge: id }) =>
    Effect.sync(() => {
      real.ship += 1
      return { parcel: `parcel-for-${id}` }
    }),
})

const Order = RunDefinition.make({
  capability: "shop.order",
  input: Schema.Struct({ amount: Schema.Number }),
  output: Schema.String,
  plan: [
    Step.make({
      name: "order",
      body: (input: { readonly amount: number }) =>
        Effect.gen(function* () {
          const cx = yield* StepCtx
          const paid = yield* cx.perform(charge, { amount: input.amount })
          const sent = yield* cx.perform(ship, { charge: paid.id })
          return sent.parcel
        }),
    }),
  ],
})

describe("TestRuntime", () => {
  it.effect(
    "a fake answers for its kind; a crash after an announce leaves the run to a second runtime once the lease lapses",
    () =>
      Effect.gen(function* () {
        // One set of memory stores shared by both runtimes, as one database is by two processes.
        const stores = Layer.succeedContext(yield* Layer.build(MemoryBackend.layer))
        const fakes = { "shop.charge": () => Effect.succeed({ id: "fake-charge" }) }
        const dying = TestRuntime.layer([Order], {
          stores,
          fakes,
          leaseTtlSecs: 5,
          crash: TestRuntime.crashAt("after_announce", "shop.ship"),
        })
        const crashed = yield* Effect.flip(
          Effect.flatMap(Runtime.Runtime, (rt) => rt.run(Order, Run.labeled({ amount: 40 }, "test"))).pipe(
            Effect.provide(dying),
          ),
        )
        expect(crashed._tag).toBe("Crashed")
        expect(real).toEqual({ charge: 0, ship: 0 })
        const run = (crashed as Runtime.Crashed).run
        const fresh = TestRuntime.layer([Order], { stores, fakes, leaseTtlSecs: 5 })
        const early = yield* Effect.flip(
          Effect.flatMap(Runtime.Runtime, (rt) => rt.resume(run)).pipe(Effect.provide(fresh)),
        )
        expect(early._tag).toBe("LeaseHeld")
        yield* TestClock.adjust("6 seconds")
        const resumed = yield* Effect.flatMap(Runtime.Runtime, (rt) => rt.resume(run)).pipe(Effect.provide(fresh))
        expect(resumed.status).toEqual(Run.RunStatus.Succeeded({ output: "parcel-for-fake-charge" }))
        // The fake answered the charge (the real act never ran); the ship announced before the
        // crash was performed once, by the resume, as Retry allows.
        expect(real).toEqual({ charge: 0, ship: 1 })
      }).pipe(Effect.scoped, Effect.provideService(Tenant, TenantId.make("shop"))),
  )
})
