/**
 * A durable timer falls due while an embedding application keeps the writer busy: runs started
 * back to back, each awaited as a promise before the next (the way an application calls
 * `runPromise`). The sweep loop that fires timers waits on the event loop's timers between ticks;
 * if the load never gave the loop a turn, that loop would never tick and the sleeping run would
 * wait for the load to stop. The sleeper must be woken and sealed while the load still runs,
 * within the loop's period and a margin for a loaded machine, on every backend.
 */
import { randomUUID } from "node:crypto"
import { Effect, Fiber, ManagedRuntime, Schema } from "effect"
import { describe, inject, it } from "vitest"
import * as Sweep from "../../src/cli/Sweep.js"
import * as Run from "../../src/domain/Run.js"
import { Tenant, TenantId } from "../../src/domain/Tenant.js"
import * as EffectKind from "../../src/runtime/EffectKind.js"
import * as RunDefinition from "../../src/runtime/RunDefinition.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import * as Step from "../../src/runtime/Step.js"
import { StepCtx } from "../../src/runtime/StepCtx.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import { assert } from "../support/Assert.js"
import * as Backend from "../support/Backend.js"
import * as Support from "./Support.js"

/** The sweep loop's period; the sleeper's timer is due one second after it is armed. */
const EVERY_SECS = 1
/** How long the sealed sleeper may take past its due instant: two periods and a loaded machine's stall. */
const TOLERANCE_MS = 12_000
/** Concurrent callers of the load, each starting its next run when the last one answered. */
const CALLERS = 8

const bump = EffectKind.make<number, { readonly n: number }>({
  kind: "underload.bump",
  args: Schema.Struct({ n: Schema.Number }),
  success: Schema.Number,
  mutates: true,
  recovery: Run.Recovery.Retry(),
  act: ({ n }) => Effect.succeed(n + 1),
})

/** The load: two journaled effects and a seal per run. */
const Busy = RunDefinition.make({
  capability: "underload.busy",
  input: Schema.Struct({ n: Schema.Number }),
  output: Schema.Number,
  plan: [
    Step.make({
      name: "both",
      body: (input: { readonly n: number }) =>
        Effect.gen(function* () {
          const cx = yield* StepCtx
          return yield* cx.perform(bump, { n: yield* cx.perform(bump, { n: input.n }) })
        }),
    }),
  ],
})

const Sleeper = RunDefinition.make({
  capability: "underload.sleeper",
  input: Schema.Struct({ n: Schema.Number }),
  output: Schema.Number,
  plan: [
    Step.make({
      name: "sleep",
      body: (input: { readonly n: number }) =>
        Effect.gen(function* () {
          const cx = yield* StepCtx
          yield* cx.sleep(1)
          return input.n
        }),
    }),
  ],
})

const backends: ReadonlyArray<[string, () => Backend.Backend]> = [
  ["memory", Backend.memory],
  ["sqlite", Backend.sqlite],
  ["postgres", () => Backend.postgres(inject("pgUrl"))],
]

describe("a durable timer under sustained load", () => {
  for (const [name, backend] of backends) {
    it(`${name}: the sleeper is woken and sealed while runs go back to back`, { timeout: 60_000 }, async () => {
      const tenant = TenantId.make(`underload-${randomUUID().slice(0, 8)}`)
      const rt = ManagedRuntime.make(Support.runtime(backend(), [Busy, Sleeper]))
      const inTenant = <A, E>(effect: Effect.Effect<A, E, Support.Services | Tenant>) =>
        rt.runPromise(Effect.provideService(effect, Tenant, tenant))
      try {
        const slept = await inTenant(Effect.flatMap(Runtime.Runtime, (x) => x.run(Sleeper, Run.labeled({ n: 7 }, "t"))))
        assert.strictEqual(slept.status._tag, "Suspended", "the sleeper waits on its timer")
        const armedAt = Date.now()
        const sweeping = await rt.runPromise(Effect.forkDaemon(Sweep.loop([tenant], EVERY_SECS, 0, false)))
        let sealedAt: number | undefined
        let runs = 0
        let runsAfterSeal = 0
        // Runs since the last check of the sleeper, shared by the callers: one check per `CALLERS`
        // runs whatever order the callers finish in. (A check keyed on each caller's share of the
        // run count never fires when the callers finish in a steady round robin.)
        let sinceCheck = 0
        const sealed = () => inTenant(Support.concludedAs(slept.run, "succeeded"))
        await Promise.all(
          Array.from({ length: CALLERS }, async (_, caller) => {
            // Each caller checks the sleeper between its runs (the check is a store read, no timer).
            while (Date.now() - armedAt < TOLERANCE_MS + 5_000) {
              const done = await inTenant(
                Effect.flatMap(Runtime.Runtime, (x) => x.run(Busy, Run.labeled({ n: caller }, "t"))),
              )
              if (done.status._tag !== "Succeeded") throw new Error(`a load run ended ${done.status._tag}`)
              runs += 1
              if (sealedAt !== undefined) {
                runsAfterSeal += 1
                // A few more runs prove the load was still going when the sleeper was sealed.
                if (runsAfterSeal >= CALLERS) return
              } else if (++sinceCheck >= CALLERS) {
                sinceCheck = 0
                if (await sealed()) sealedAt ??= Date.now()
              }
            }
          }),
        )
        await rt.runPromise(Fiber.interrupt(sweeping))
        const sealedAfterLoad = sealedAt === undefined ? await sealed() : true
        assert.isTrue(
          sealedAt !== undefined,
          `the sleeper was not sealed within ${TOLERANCE_MS} ms of its timer while ${runs} runs went back to back (sealed once the load stopped: ${sealedAfterLoad})`,
        )
        assert.isTrue(runs > CALLERS, `the load ran (${runs} runs)`)
        assert.isTrue(
          (sealedAt ?? 0) - armedAt <= TOLERANCE_MS,
          `sealed ${(sealedAt ?? 0) - armedAt} ms after the timer was armed`,
        )
        const records = await inTenant(Effect.flatMap(JournalStore, (j) => j.read(slept.run, 1)))
        assert.strictEqual(records[records.length - 1]?.kind.kind, "RunSealed")
      } finally {
        await rt.dispose()
      }
    })
  }
})
