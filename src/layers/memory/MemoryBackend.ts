/**
 * Every store in process memory: plain maps, written from the spec as the simplest code that is
 * obviously correct, with each verb atomic because it runs in one synchronous step.
 *
 * What it is for: users' own tests, which want the real contracts (first write wins, orderings,
 * limits, the tagged errors) without a database; and the reference model that model-based tests
 * compare the PostgreSQL and SQLite layers against. It runs the full conformance battery.
 *
 * What it does not do: nothing survives the process, and nothing is shared with another process
 * or with another build of this layer (each build starts empty). `Backend` and `Corrupt` never
 * occur, since nothing is decoded from storage.
 */
import { Effect, Layer } from "effect"
import { JournalStore } from "../../services/JournalStore.js"
import { LogStore } from "../../services/LogStore.js"
import { QuotaStore } from "../../services/QuotaStore.js"
import type { Stores } from "../../services/Stores.js"
import * as BatchStoreMemory from "./BatchStoreMemory.js"
import * as CaseStoreMemory from "./CaseStoreMemory.js"
import * as EventStoreMemory from "./EventStoreMemory.js"
import * as Halts from "./internal/Halts.js"
import * as Sequenced from "./internal/Sequenced.js"
import * as JournalStoreMemory from "./JournalStoreMemory.js"
import * as LogStoreMemory from "./LogStoreMemory.js"
import * as QuotaStoreMemory from "./QuotaStoreMemory.js"
import * as TaskStoreMemory from "./TaskStoreMemory.js"
import * as TimerStoreMemory from "./TimerStoreMemory.js"

/** Every store, empty, in memory. */
export const layer: Layer.Layer<Stores> = Layer.mergeAll(
  CaseStoreMemory.layer,
  EventStoreMemory.layer,
  TimerStoreMemory.layer,
  TaskStoreMemory.layer,
  BatchStoreMemory.layer,
  // One halt for the quota store that sets it and the journal store whose opening append checks
  // it; one sequence of sealed leaves for the journal store that seals and the log store that
  // integrates them.
  Layer.unwrapEffect(
    Effect.sync(() => {
      const halts = Halts.make()
      const sequenced = Sequenced.make()
      return Layer.mergeAll(
        Layer.effect(QuotaStore, QuotaStoreMemory.make(halts)),
        Layer.effect(JournalStore, JournalStoreMemory.make(halts, sequenced)),
        Layer.effect(LogStore, LogStoreMemory.make(sequenced)),
      )
    }),
  ),
)
