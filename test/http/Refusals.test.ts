/**
 * How requests are refused, on each backend: 401 for a missing or unknown credential, 413 for a
 * body over 1 MiB, 422 for what fails validation (naming the field), 503 when the store is down;
 * and a refused request writes nothing.
 */

import { SqlClient } from "@effect/sql"
import { describe, layer } from "@effect/vitest"
import Database from "better-sqlite3"
import { Effect, Exit, Layer, Option, Scope } from "effect"
import { QuotaStore } from "../../src/services/QuotaStore.js"
import type * as Stores from "../../src/services/Stores.js"
import { TaskStore } from "../../src/services/TaskStore.js"
import { task } from "../conformance/task/Fixtures.js"
import { assert } from "../support/Assert.js"
import type * as Backend from "../support/Backend.js"
import * as Http from "../support/Http.js"

const json = (body: unknown) => ({ headers: { "content-type": "application/json" }, body: JSON.stringify(body) })

const refusedWith = (answer: Http.RawResponse, status: number, tag: string, pattern?: RegExp) => {
  assert.strictEqual(answer.status, status, answer.text)
  const body = answer.json as { _tag: string; message: string }
  assert.strictEqual(body._tag, tag)
  if (pattern !== undefined) assert.match(body.message, pattern)
}

/**
 * How to take a backend down while a server runs on it. PostgreSQL: the server's stores sit on a
 * pool that was opened, then closed, so every statement fails. SQLite: another process holds the
 * file's write lock past the busy timeout, so writes fail (WAL readers still read). Closing a
 * SQLite client instead is not an outage the layers survive; see the report.
 */
interface Outage {
  readonly stores?: Layer.Layer<Stores.Stores>
  readonly during: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  readonly readsFail: boolean
}

const closedPool = (backend: Backend.Backend) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    const context = yield* Layer.buildWithScope(backend.pooled(2), scope)
    yield* Scope.close(scope, Exit.void)
    return { stores: Layer.succeedContext(context), during: (effect) => effect, readsFail: true } satisfies Outage
  })

const lockedFile = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const [main] = (yield* Effect.orDie(sql`PRAGMA database_list`)) as ReadonlyArray<{ file: string }>
  if (main === undefined) return yield* Effect.dieMessage("no database file")
  const outage: Outage = {
    readsFail: false,
    during: (effect) =>
      Effect.acquireUseRelease(
        Effect.sync(() => {
          const holder = new Database(main.file)
          holder.exec("BEGIN EXCLUSIVE")
          return holder
        }),
        () => effect,
        (holder) => Effect.sync(() => holder.exec("ROLLBACK")).pipe(Effect.ensuring(Effect.sync(() => holder.close()))),
      ),
  }
  return outage
})

for (const backend of Http.backends()) {
  describe(`http refusals (${backend.name})`, () => {
    // With the raw client: the SQLite outage finds the database file through it.
    layer(Option.getOrThrow(backend.sql).layer, { excludeTestServices: true })((it) => {
      it.effect("no credential, an unknown one, or another scheme is 401", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const t = yield* f.inTenant(Effect.flatMap(TaskStore, (s) => s.open(task())))
            const missing = yield* Effect.flip(f.as(undefined).tasks.claim({ path: { task: t.id } }))
            assert.strictEqual(missing._tag, "Unauthorized")
            const unknown = yield* Effect.flip(f.stranger.tasks.claim({ path: { task: t.id } }))
            assert.strictEqual(unknown._tag, "Unauthorized")
            const basic = yield* f.raw("POST", `/tasks/${t.id}/claim`, {
              headers: { authorization: `Basic ${Buffer.from(`rita:${f.tokens.rita}`).toString("base64")}` },
            })
            refusedWith(basic, 401, "Unauthorized")
            // Authentication comes before the body is looked at.
            refusedWith(yield* f.raw("POST", `/tasks/${t.id}/decide`, { body: "{" }), 401, "Unauthorized")
            assert.deepStrictEqual(
              Option.map(yield* f.inTenant(Effect.flatMap(TaskStore, (s) => s.task(t.id))), (x) => x.state),
              Option.some("open"),
            )
          }),
        ),
      )

      it.effect("a body over 1 MiB is 413 and writes nothing", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const t = yield* f.inTenant(Effect.flatMap(TaskStore, (s) => s.open(task())))
            const big = "x".repeat(1_048_577)
            refusedWith(
              yield* f.raw("POST", `/tasks/${t.id}/decide`, json({ approved: true, reason: big })),
              413,
              "PayloadTooLarge",
            )
            refusedWith(
              yield* f.raw("POST", "/events", { as: "pat", ...json({ id: "1", kind: "k", payload: big }) }),
              413,
              "PayloadTooLarge",
            )
            refusedWith(
              yield* f.raw("PUT", "/admin/halt", { as: "ada", ...json({ reason: big }) }),
              413,
              "PayloadTooLarge",
            )
            // Just under the limit is read, and refused only for what it says.
            const near = yield* f.raw("POST", `/tasks/${t.id}/decide`, {
              as: "rita",
              ...json({ approved: true, reason: "x".repeat(1_048_000), actor: "rita" }),
            })
            refusedWith(near, 422, "InvalidRequest", /actor/)
            assert.deepStrictEqual(yield* f.inTenant(Effect.flatMap(TaskStore, (s) => s.task(t.id))), Option.some(t))
            assert.deepStrictEqual(yield* f.inTenant(Effect.flatMap(QuotaStore, (q) => q.halted())), Option.none())
          }),
        ),
      )

      it.effect("malformed JSON, unknown fields, a body naming an actor, bad ids and control characters are 422", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const t = yield* f.inTenant(Effect.flatMap(TaskStore, (s) => s.open(task())))
            const decide = `/tasks/${t.id}/decide`
            const cases: ReadonlyArray<
              readonly [string, string, { headers?: Record<string, string>; body?: string }, RegExp]
            > = [
              [
                "POST",
                decide,
                { headers: { "content-type": "application/json" }, body: '{"approved": tru' },
                /body: not JSON/,
              ],
              ["POST", decide, json({ approved: true, reason: "ok", actor: "rita" }), /actor: is unexpected/],
              ["POST", decide, json({ approved: true, reason: "ok", roles: ["admin"] }), /roles: is unexpected/],
              ["POST", decide, json({ approved: "yes", reason: "ok" }), /approved/],
              ["POST", decide, json({ approved: true }), /reason/],
              ["POST", decide, json({ approved: true, reason: "bell\u0007" }), /reason: .*control/],
              ["POST", "/tasks/not-a-task/claim", {}, /task: .*TaskId/],
              ["POST", `/tasks/task_${t.id.toUpperCase()}/claim`, {}, /task: /],
              ["GET", "/cases/case_nope", {}, /case: .*CaseId/],
              ["GET", "/cases?status=sleeping", {}, /status/],
              ["GET", "/tasks?limit=0", {}, /limit/],
              ["GET", "/tasks?limit=ten", {}, /limit/],
              ["POST", `/tasks/${t.id}/takeover`, json({ from: "sam\u0000" }), /from: .*control/],
              ["POST", `/tasks/${t.id}/takeover`, json({ from: "sam", to: "rita" }), /to: is unexpected/],
              ["PUT", "/admin/halt", json({ reason: "" }), /reason: .*empty/],
            ]
            for (const [method, path, request, pattern] of cases) {
              const as = path === "/admin/halt" ? "ada" : "rita"
              refusedWith(yield* f.raw(method, path, { as, ...request }), 422, "InvalidRequest", pattern)
            }
            assert.deepStrictEqual(yield* f.inTenant(Effect.flatMap(TaskStore, (s) => s.task(t.id))), Option.some(t))
            assert.deepStrictEqual(yield* f.inTenant(Effect.flatMap(QuotaStore, (q) => q.halted())), Option.none())
          }),
        ),
      )

      it.effect("a store outage is 503 Unavailable and writes nothing; health and metrics still answer", () =>
        Effect.gen(function* () {
          const outage: Outage = backend.capabilities.concurrentWriters ? yield* closedPool(backend) : yield* lockedFile
          yield* Http.withServer(
            (f) =>
              Effect.gen(function* () {
                yield* outage.during(
                  Effect.gen(function* () {
                    const down = yield* Effect.flip(f.as("ada").admin.halt({ payload: { reason: "incident" } }))
                    assert.strictEqual(down._tag, "Unavailable")
                    if (outage.readsFail) {
                      assert.strictEqual(
                        (yield* Effect.flip(f.as("rita").tasks.list({ urlParams: {} })))._tag,
                        "Unavailable",
                      )
                      refusedWith(yield* f.raw("GET", "/cases", { as: "rita" }), 503, "Unavailable")
                      refusedWith(
                        yield* f.raw("POST", "/events", { as: "pat", ...json({ id: "1", kind: "k" }) }),
                        503,
                        "Unavailable",
                      )
                    }
                    assert.deepStrictEqual(yield* f.as(undefined).health.healthz(), { status: "ok" })
                    const metrics = yield* f.raw("GET", "/metrics", {
                      headers: { authorization: `Bearer ${f.scrapeToken}` },
                    })
                    assert.strictEqual(metrics.status, 200)
                    // A census that cannot be read is left off the page, never shown as numbers
                    // an earlier page (another tenant's, perhaps) left behind.
                    if (outage.readsFail) assert.doesNotMatch(metrics.text, /^agentplane_tasks_open /m)
                    // Refusals that need no store still come first.
                    refusedWith(yield* f.raw("GET", "/tasks", { as: "nobody" }), 403, "Forbidden")
                  }),
                )
                if (!outage.readsFail) {
                  assert.deepStrictEqual(
                    yield* f.inTenant(Effect.flatMap(QuotaStore, (q) => q.halted())),
                    Option.none(),
                  )
                }
              }),
            outage.stores === undefined ? {} : { stores: outage.stores },
          )
        }),
      )
    })
  })
}
