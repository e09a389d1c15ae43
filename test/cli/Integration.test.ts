/**
 * The integration step `serve --log-key` runs beside the server (`Integration.loop`): every tenant
 * of the credential table caught up at once, then again each period, on the memory backend with
 * the test clock; and `catchUp` works through a backlog larger than one batch.
 */
import { describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Option, TestClock } from "effect"
import * as Integration from "../../src/cli/Integration.js"
import { Tenant, type TenantId } from "../../src/domain/Tenant.js"
import * as MemoryBackend from "../../src/layers/memory/MemoryBackend.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import { LogStore } from "../../src/services/LogStore.js"
import { deploymentKey, sealed } from "../conformance/log/Fixtures.js"
import { assert } from "../support/Assert.js"
import { freshTenant } from "../support/Backend.js"

const sealIn = (tenant: TenantId, n: number) =>
  Effect.flatMap(JournalStore, (store) =>
    Effect.forEach(
      Array.from({ length: n }, (_, i) => i),
      (i) => sealed(store, i),
    ),
  ).pipe(Effect.provideService(Tenant, tenant))

const sizeIn = (tenant: TenantId) =>
  Effect.flatMap(LogStore, (log) => log.checkpoint()).pipe(
    Effect.map(Option.match({ onNone: () => 0, onSome: (cp) => cp.size })),
    Effect.provideService(Tenant, tenant),
  )

describe("Integration", () => {
  it.effect("loop catches every tenant up at once, then again each period", () =>
    Effect.gen(function* () {
      const { key } = deploymentKey()
      const [a, b] = [freshTenant(), freshTenant()]
      yield* sealIn(a, 3)
      yield* sealIn(b, 1)
      const fiber = yield* Effect.fork(Integration.loop([a, b], key, 10))
      yield* TestClock.adjust("1 millis")
      assert.deepStrictEqual([yield* sizeIn(a), yield* sizeIn(b)], [3, 1])
      yield* sealIn(b, 2)
      yield* TestClock.adjust("5 seconds")
      assert.strictEqual(yield* sizeIn(b), 1)
      yield* TestClock.adjust("5 seconds")
      assert.deepStrictEqual([yield* sizeIn(a), yield* sizeIn(b)], [3, 3])
      yield* Fiber.interrupt(fiber)
    }).pipe(Effect.provide(Layer.fresh(MemoryBackend.layer))),
  )

  it.effect("catchUp works through more than one batch", () =>
    Effect.gen(function* () {
      const { key } = deploymentKey()
      const tenant = freshTenant()
      yield* sealIn(tenant, Integration.BATCH + 5)
      const done = yield* Integration.catchUp(key).pipe(Effect.provideService(Tenant, tenant))
      assert.deepStrictEqual(done, { integrated: Integration.BATCH + 5, size: Integration.BATCH + 5 })
    }).pipe(Effect.provide(Layer.fresh(MemoryBackend.layer))),
  )
})
