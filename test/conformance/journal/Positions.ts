/**
 * §6.5: a seal takes its tenant's next log position, dense from 0 with no gaps, tenants apart
 * (`LogSequence`). Positions are a column the stores never return, so these read `run_seal` and
 * `log_sequence` through the raw client; the log store's battery shows the same on memory.
 */
import { SqlClient } from "@effect/sql"
import { describe } from "@effect/vitest"
import { Context, Effect, Layer, Schema } from "effect"
import { generateRunId } from "../../../src/domain/Ids.js"
import { Tenant, type TenantId } from "../../../src/domain/Tenant.js"
import { RunSealed } from "../../../src/errors/StoreError.js"
import { JournalStore } from "../../../src/services/JournalStore.js"
import { assert } from "../../support/Assert.js"
import { type Backend, freshTenant, type SqlTester } from "../../support/Backend.js"
import { assertError } from "../../support/Errors.js"
import { fire, runs, shape } from "../../support/Races.js"
import { concluded, leased, note, one, written } from "./Fixtures.js"

const Int = Schema.Union(Schema.Number, Schema.NumberFromString)
const Positions = Schema.Array(Schema.Struct({ run_id: Schema.String, log_position: Int }))
const Sizes = Schema.Array(Schema.Struct({ size: Int }))

/** The tenant's seals as (run, position) in position order, and its counter (`log_sequence.size`, 0 when absent). */
const logOf = (tenant: TenantId) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const seals = yield* sql`SELECT run_id, log_position FROM run_seal WHERE tenant = ${tenant}
                              ORDER BY log_position`.pipe(Effect.flatMap(Schema.decodeUnknown(Positions)))
    const [counter] = yield* sql`SELECT size FROM log_sequence WHERE tenant = ${tenant}`.pipe(
      Effect.flatMap(Schema.decodeUnknown(Sizes)),
    )
    return { seals: seals.map((s) => [s.run_id, s.log_position] as const), size: counter?.size ?? 0 }
  })

const upTo = (n: number) => Array.from({ length: n }, (_, i) => i)

export const positions = (sqlTest: SqlTester, backend: Backend) => {
  describe("log positions", () => {
    sqlTest("seals take positions 0, 1, 2 … in seal order, each tenant its own", () =>
      Effect.gen(function* () {
        const store = yield* JournalStore
        const a = freshTenant()
        const b = freshTenant()
        const sealOne = (tenant: TenantId, i: number) =>
          Effect.gen(function* () {
            // Every way a seal is written: bare on an unwritten run, bare, and with a last batch.
            if (i % 3 === 0) {
              const r = yield* leased()
              yield* store.seal(r.run, r.epoch, "swept")
              return r.run
            }
            const r = yield* written(1)
            yield* store.seal(r.run, r.epoch, "succeeded", i % 3 === 1 ? undefined : [concluded("succeeded")])
            return r.run
          }).pipe(Effect.provideService(Tenant, tenant))
        const sealedA: Array<string> = []
        const sealedB: Array<string> = []
        for (let i = 0; i < 7; i++) {
          sealedA.push(yield* sealOne(a, i))
          if (i % 2 === 0) sealedB.push(yield* sealOne(b, i))
        }
        assert.deepStrictEqual(yield* logOf(a), { seals: sealedA.map((run, i) => [run, i] as const), size: 7 })
        assert.deepStrictEqual(yield* logOf(b), { seals: sealedB.map((run, i) => [run, i] as const), size: 4 })
      }),
    )

    sqlTest("a refused seal takes no position", () =>
      Effect.gen(function* () {
        const store = yield* JournalStore
        const tenant = freshTenant()
        yield* Effect.gen(function* () {
          const r = yield* written(1)
          yield* store.seal(r.run, r.epoch, "succeeded")
          assertError(
            yield* Effect.flip(store.seal(r.run, r.epoch, "succeeded", one(note("again")))),
            new RunSealed({ run: r.run, outcome: "succeeded" }),
          )
          yield* Effect.flip(store.seal(r.run, r.epoch, "succeeded"))
          const next = yield* written(1)
          yield* store.seal(next.run, next.epoch, "succeeded", one(note("last")))
          assert.deepStrictEqual(yield* logOf(tenant), {
            seals: [
              [r.run, 0],
              [next.run, 1],
            ],
            size: 2,
          })
        }).pipe(Effect.provideService(Tenant, tenant))
      }),
    )

    // On pg the seals' statements interleave through a small pool (some on the remembered-head
    // path, one statement; some the long way, a transaction); elsewhere they run one at a time
    // and the same outcome is expected.
    sqlTest.prop(
      "concurrent seals of two tenants: each tenant's positions are exactly 0 … its count − 1",
      shape,
      ({ fibers, pool }) =>
        Effect.scoped(
          Effect.gen(function* () {
            const context = yield* Layer.build(backend.pooled(pool))
            const store = Context.get(context, JournalStore)
            const tenants = [freshTenant(), freshTenant()] as const
            const tenantOf = (i: number) => tenants[i % 2] as TenantId
            // Leased and written first, so only the seals race.
            // Written through the racing instance, so pg remembers each head and a seal with a
            // last batch goes as one statement.
            const ready = yield* Effect.forEach(upTo(fibers), (i) =>
              Effect.gen(function* () {
                const lease = yield* store.acquire(generateRunId(), `w-${i}`, 60)
                yield* store.append(lease.run, lease.epoch, one(note(`first ${i}`)))
                return lease
              }).pipe(Effect.provideService(Tenant, tenantOf(i))),
            )
            const sealed = yield* fire(fibers, (i) => {
              const lease = ready[i] as (typeof ready)[number]
              const last = i % 2 === 0 ? ([note(`last ${i}`), concluded("succeeded")] as const) : undefined
              return store
                .seal(lease.run, lease.epoch, "succeeded", last)
                .pipe(Effect.as(lease.run as string), Effect.provideService(Tenant, tenantOf(i)))
            })
            for (const [t, tenant] of tenants.entries()) {
              const mine = sealed.filter((_, i) => i % 2 === t)
              const log = yield* logOf(tenant)
              assert.deepStrictEqual(
                log.seals.map(([, p]) => p),
                upTo(mine.length),
              )
              assert.deepStrictEqual(log.seals.map(([run]) => run).sort(), [...mine].sort())
              assert.strictEqual(log.size, mine.length)
            }
          }),
        ),
      runs,
    )
  })
}
