/**
 * G3: nothing is invented on read. These are the only tests that write rows with raw SQL: the
 * damage they plant cannot be made through the store.
 */
import { SqlClient } from "@effect/sql"
import { describe } from "@effect/vitest"
import { Effect } from "effect"
import { dedupKeyOf } from "../../../src/domain/Event.js"
import { generateRunId } from "../../../src/domain/Ids.js"
import { Tenant, type TenantId } from "../../../src/domain/Tenant.js"
import { EventStore } from "../../../src/services/EventStore.js"
import { assert } from "../../support/Assert.js"
import { freshTenant, type SqlTester } from "../../support/Backend.js"
import { at, effectKey, event, key, wait } from "./Fixtures.js"

/** Runs `plant` (raw SQL) and then `read` as one fresh tenant; `read` must fail with `Corrupt`. */
const corrupt = <A, E, R>(
  plant: (sql: SqlClient.SqlClient, tenant: TenantId) => Effect.Effect<unknown, unknown, R>,
  read: Effect.Effect<A, E, R | Tenant>,
) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const tenant = freshTenant()
    yield* plant(sql, tenant).pipe(Effect.orDie)
    const error = yield* Effect.flip(read).pipe(Effect.provideService(Tenant, tenant))
    assert.strictEqual((error as { _tag?: string })._tag, "Corrupt", `expected Corrupt, got ${String(error)}`)
  })

const run = generateRunId()

const subscriptionRow = (sql: SqlClient.SqlClient, tenant: TenantId, phase: string, runId: string = run) =>
  sql`INSERT INTO subscriptions (tenant, run_id, effect_key, case_id, step, phase, event_kind, namespace, value, created_at)
      VALUES (${tenant}, ${runId}, ${effectKey()}, NULL, 1, ${phase}, ${"reply"}, ${"doc"}, ${"a"}, 10)`

/** A dead event whose payload text is `payload`, with one key. */
const deadRow = (sql: SqlClient.SqlClient, tenant: TenantId, payload: string, reason: string | null = "late") =>
  Effect.zipRight(
    sql`INSERT INTO inbound_events (tenant, event_id, source, bare_id, kind, payload, received_at, claimed_by, claimed_at, dead, dead_reason)
        VALUES (${tenant}, ${dedupKeyOf("mail", "1")}, ${"mail"}, ${"1"}, ${"reply"}, ${payload}, 10, NULL, NULL, TRUE, ${reason})`,
    sql`INSERT INTO inbound_correlation (tenant, event_id, namespace, value)
        VALUES (${tenant}, ${dedupKeyOf("mail", "1")}, ${"doc"}, ${"a"})`,
  )

export const damage = (test: SqlTester) => {
  describe("damage reads as Corrupt", () => {
    test("an unknown phase in a subscription row, in waiting", () =>
      corrupt(
        (sql, t) => subscriptionRow(sql, t, "sideways"),
        Effect.flatMap(EventStore, (s) => s.waiting(10)),
      ))

    test("an unknown phase in a subscription row, in matchWaiter", () =>
      corrupt(
        (sql, t) =>
          Effect.zipRight(
            subscriptionRow(sql, t, "sideways"),
            Effect.provideService(
              Effect.flatMap(EventStore, (s) => s.buffer(event("1", [key("doc", "a")]), at(20))),
              Tenant,
              t,
            ),
          ),
        Effect.flatMap(EventStore, (s) => s.matchWaiter(event("1", [key("doc", "a")]), at(30))),
      ))

    test("an unknown phase in a subscription row, in deliverTo", () =>
      corrupt(
        (sql, t) => subscriptionRow(sql, t, "sideways"),
        Effect.flatMap(EventStore, (s) => s.deliverTo(run, event("1", [key("doc", "a")]), at(30))),
      ))

    test("a run id that does not parse, in waiting", () =>
      corrupt(
        (sql, t) => subscriptionRow(sql, t, "forward", "run_garbage"),
        Effect.flatMap(EventStore, (s) => s.waiting(10)),
      ))

    test("unparsable payload JSON, in deadLetters", () =>
      corrupt(
        (sql, t) => deadRow(sql, t, "{not json"),
        Effect.flatMap(EventStore, (s) => s.deadLetters(10)),
      ))

    test("unparsable payload JSON, in claimFor", () =>
      corrupt(
        (sql, t) =>
          sql`INSERT INTO inbound_events (tenant, event_id, source, bare_id, kind, payload, received_at)
              VALUES (${t}, ${dedupKeyOf("mail", "1")}, ${"mail"}, ${"1"}, ${"reply"}, ${"{not json"}, 10)`.pipe(
            Effect.zipRight(
              sql`INSERT INTO inbound_correlation (tenant, event_id, namespace, value)
                  VALUES (${t}, ${dedupKeyOf("mail", "1")}, ${"doc"}, ${"a"})`,
            ),
          ),
        Effect.flatMap(EventStore, (s) => s.claimFor(wait([key("doc", "a")]), at(20))),
      ))

    test("a dead event with no recorded reason reads unclaimed", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const tenant = freshTenant()
        yield* deadRow(sql, tenant, '{"ok":1}', null)
        const letters = yield* Effect.flatMap(EventStore, (s) => s.deadLetters(10)).pipe(
          Effect.provideService(Tenant, tenant),
        )
        assert.deepStrictEqual(
          letters.map((d) => [d.reason, d.event.payload, d.event.correlation]),
          [["unclaimed", { ok: 1 }, [key("doc", "a")]]],
        )
      }))
  })
}
