/**
 * Sealing is invisible to everything above the stores: the CaseStore, EventStore and TaskStore batteries
 * and the whole runtime battery pass through the sealing stores, on the memory backend and on
 * SQLite. Left out by design: the batteries' raw-SQL tests (the fixture offers no `sql`), since
 * rows hold ciphertext; and the JournalStore battery, whose byte-exact `raw`, 1 MiB boundary and
 * foreign-tenant import tests assume plaintext bodies (SealedJournal.test.ts covers the journal).
 */
import { randomBytes } from "node:crypto"
import { Effect, Layer, Option } from "effect"
import { describe } from "vitest"
import * as Kek from "../../src/erasure/Kek.js"
import * as SealedStores from "../../src/erasure/SealedStores.js"
import * as KeyRingMemory from "../../src/layers/memory/KeyRingMemory.js"
import { KeyRing } from "../../src/services/KeyRing.js"
import * as CaseStore from "../conformance/CaseStore.js"
import * as EventStore from "../conformance/EventStore.js"
import * as TaskStore from "../conformance/TaskStore.js"
import * as RuntimeBattery from "../runtime/Battery.js"
import * as Backend from "../support/Backend.js"

/** `inner` with its journal, case and task stores sealing through one key ring shared by all its clients. */
const sealed = (inner: Backend.Backend): Backend.Backend => {
  const ring = Layer.succeed(KeyRing, Effect.runSync(KeyRingMemory.make(Kek.make(randomBytes(32)))))
  return {
    name: `${inner.name}, sealed`,
    layer: Layer.provide(SealedStores.over(inner.layer), ring),
    pooled: (size) => Layer.provide(SealedStores.over(inner.pooled(size)), ring),
    sql: Option.none(),
    capabilities: inner.capabilities,
    keyRing: ring,
  }
}

for (const backend of [sealed(Backend.memory()), sealed(Backend.sqlite())]) {
  describe(backend.name, () => {
    CaseStore.suite(backend)
    EventStore.suite(backend)
    TaskStore.suite(backend)
    RuntimeBattery.suite(backend)
  })
}
