/**
 * Model-based tests (issue 7): random sequences of every store method run against the in-memory
 * layers (the model) and against each SQL backend, every answer compared. Each sequence gets a
 * fresh model and two fresh tenants on the shared database. `AGENTPLANE_MODEL_RUNS` sets how many
 * sequences per store and backend.
 */
import { describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { inject } from "vitest"
import * as MemoryBackend from "../src/layers/memory/MemoryBackend.js"
import * as BatchStore from "./model/BatchStore.js"
import * as CaseStore from "./model/CaseStore.js"
import * as EventStore from "./model/EventStore.js"
import * as JournalStore from "./model/JournalStore.js"
import * as QuotaStore from "./model/QuotaStore.js"
import * as TaskStore from "./model/TaskStore.js"
import * as TimerStore from "./model/TimerStore.js"
import * as Backend from "./support/Backend.js"
import * as Model from "./support/Model.js"

const stores = [
  CaseStore.model,
  EventStore.model,
  TimerStore.model,
  TaskStore.model,
  BatchStore.model,
  QuotaStore.model,
  JournalStore.model,
] as const

/** Every sequence builds the memory layers anew, so the model starts empty. */
const memory: Model.Side = {
  name: "memory",
  fresh: () => Effect.runPromise(Effect.scoped(Layer.build(MemoryBackend.layer))),
}

const suite = (backend: Backend.Backend) =>
  // Real databases and real time: the TestClock would only stall the driver's timers.
  layer(backend.layer, { excludeTestServices: true })(backend.name, (it) => {
    for (const store of stores) {
      it.effect(
        `${store.name} answers as the model does`,
        () =>
          Effect.flatMap(Effect.context<Model.Stores>(), (system) =>
            Model.check(store, memory, { name: backend.name, fresh: async () => system }),
          ),
        Model.timeout,
      )
    }
  })

describe("model", () => {
  suite(Backend.sqlite())
  suite(Backend.postgres(inject("pgUrl")))
})
