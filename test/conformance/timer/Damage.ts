/**
 * G3: nothing is invented on read. These are the only tests that write timer rows with raw SQL:
 * the damage they plant cannot be made through the store.
 */
import { SqlClient } from "@effect/sql"
import { describe } from "@effect/vitest"
import { Effect } from "effect"
import { generateRunId } from "../../../src/domain/Ids.js"
import { Tenant, type TenantId } from "../../../src/domain/Tenant.js"
import { TimerStore } from "../../../src/services/TimerStore.js"
import { assert } from "../../support/Assert.js"
import { freshTenant, type SqlTester } from "../../support/Backend.js"
import { arm, at, effectKey, timer } from "./Fixtures.js"

interface Row {
  readonly run?: string
  readonly effect?: string
  readonly case?: string | null
  readonly phase?: string
}

/** A due, unclaimed timers row with one damaged column. */
const plant = (sql: SqlClient.SqlClient, tenant: TenantId, row: Row) =>
  sql`INSERT INTO timers (tenant, run_id, effect_key, case_id, step, phase, fire_at, claimed_at, claimable_at)
      VALUES (${tenant}, ${row.run ?? generateRunId()}, ${row.effect ?? effectKey()}, ${row.case ?? null}, 0,
              ${row.phase ?? "forward"}, 10, NULL, 10)`

const damages: ReadonlyArray<readonly [string, Row]> = [
  ["an unknown phase", { phase: "sideways" }],
  ["a run id that does not parse", { run: "run_garbage" }],
  ["an effect key that does not parse", { effect: "ek:not-hex" }],
  ["a case id that does not parse", { case: "case_nope" }],
]

const corrupt = <A, E>(error: A | E) =>
  assert.strictEqual((error as { _tag?: string })._tag, "Corrupt", `expected Corrupt, got ${String(error)}`)

export const damage = (test: SqlTester) => {
  describe("damage reads as Corrupt", () => {
    for (const [name, row] of damages) {
      test(`${name}, in pending and claimDue`, () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const store = yield* TimerStore
          const tenant = freshTenant()
          yield* plant(sql, tenant, row)
          const asTenant = <X, E, R>(e: Effect.Effect<X, E, R>) => Effect.provideService(e, Tenant, tenant)
          corrupt(yield* Effect.flip(asTenant(store.pending(10))))
          corrupt(yield* Effect.flip(asTenant(store.claimDue(at(100), 10))))
        }))
    }

    test("a claim that meets damage takes nothing, not even the sound timers", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const store = yield* TimerStore
        const tenant = freshTenant()
        const sound = timer(5)
        yield* arm(sound).pipe(Effect.provideService(Tenant, tenant))
        yield* plant(sql, tenant, { phase: "sideways" })
        corrupt(yield* Effect.flip(store.claimDue(at(100), 10).pipe(Effect.provideService(Tenant, tenant))))
        const held = yield* sql`SELECT claimed_at FROM timers WHERE tenant = ${tenant} AND run_id = ${sound.run}`
        assert.deepStrictEqual(held, [{ claimed_at: null }])
      }))

    test("damage in one tenant does not reach another's reads", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const store = yield* TimerStore
        yield* plant(sql, freshTenant(), { phase: "sideways" })
        const clean = freshTenant()
        const t = timer(5)
        const asClean = <X, E, R>(e: Effect.Effect<X, E, R>) => Effect.provideService(e, Tenant, clean)
        yield* asClean(arm(t))
        assert.deepStrictEqual(yield* asClean(store.pending(10)), [t])
        assert.deepStrictEqual(yield* asClean(store.claimDue(t.fireAt, 10)), [t])
      }))
  })
}
