/**
 * Case routes on each backend through the derived client: the status worklist, one case with
 * its deadlines, tasks and history, and the breached obligations.
 */
import { describe, layer } from "@effect/vitest"
import { Effect, Option } from "effect"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import { generateCaseId } from "../../src/domain/Ids.js"
import { NotFound } from "../../src/errors/StoreError.js"
import { CaseStore } from "../../src/services/CaseStore.js"
import { TaskStore } from "../../src/services/TaskStore.js"
import { deadline, open as opened } from "../conformance/case/Fixtures.js"
import { written } from "../conformance/journal/Fixtures.js"
import { task } from "../conformance/task/Fixtures.js"
import { assert } from "../support/Assert.js"
import { assertError } from "../support/Errors.js"
import * as Http from "../support/Http.js"

for (const backend of Http.backends()) {
  describe(`http cases (${backend.name})`, () => {
    layer(backend.layer, { excludeTestServices: true })((it) => {
      it.effect("GET /cases lists by status, escalated by default, newest first", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const [older, newer, open] = yield* f.inTenant(
              Effect.gen(function* () {
                const store = yield* CaseStore
                const older = yield* opened([CorrelationKey.make("claim", "C-1")], 1_000)
                const newer = yield* opened([CorrelationKey.make("claim", "C-2")], 2_000)
                const open = yield* opened([CorrelationKey.make("claim", "C-3")], 3_000)
                yield* store.setStatus(older, "escalated")
                yield* store.setStatus(newer, "escalated")
                return [older, newer, open] as const
              }),
            )
            const escalated = yield* f.as("rita").cases.list({ urlParams: {} })
            assert.deepStrictEqual([escalated.items.map((c) => c.id), escalated.truncated], [[newer, older], false])
            const opens = yield* f.as("rita").cases.list({ urlParams: { status: "open", limit: 10 } })
            assert.deepStrictEqual(
              opens.items.map((c) => [c.id, c.kind, c.correlation.map(String), c.state, c.version, c.openedAt]),
              [[open, "claim", ["claim=C-3"], null, 0, 3_000]],
            )
            const raw = yield* f.raw("GET", "/cases?status=open", { as: "rita" })
            assert.strictEqual(
              (raw.json as { items: Array<{ openedAt: string }> }).items[0]?.openedAt,
              "1970-01-01T00:50:00Z",
            )
          }),
        ),
      )

      it.effect("GET /cases/{case} shows deadlines, tasks with mayDecide, and the case's history", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const kase = yield* f.inTenant(
              Effect.gen(function* () {
                const store = yield* CaseStore
                const kase = yield* opened([CorrelationKey.make("claim", "C-9")], 1_000)
                yield* store.registerDeadline(deadline(kase, "reply", 5_000, "pending", 4_000))
                yield* Effect.flatMap(TaskStore, (tasks) => tasks.open(task({ case: kase, excludedActors: ["rita"] })))
                yield* written(3, { case: kase })
                return kase
              }),
            )
            const detail = yield* f.as("rita").cases.read({ path: { case: kase } })
            assert.strictEqual(detail.case.id, kase)
            assert.deepStrictEqual(
              detail.deadlines.map((d) => [d.name, d.resolvedAt, d.warnAt, d.state]),
              [["reply", 5_000, Option.some(4_000), "pending"]],
            )
            assert.deepStrictEqual(
              detail.tasks.map((t) => [t.case, t.mayDecide]),
              [[Option.some(kase), false]],
            )
            assert.deepStrictEqual(
              detail.history.map((h) => [h.seq, h.kind]),
              [
                [1, "Note"],
                [2, "Note"],
                [3, "Note"],
              ],
            )
            assert.isFalse(detail.historyTruncated)
            // The bare ULID names the same case.
            const bare = yield* f.raw("GET", `/cases/${kase.slice(5)}`, { as: "rita" })
            assert.deepStrictEqual([bare.status, (bare.json as { case: { id: string } }).case.id], [200, kase])
          }),
        ),
      )

      it.effect("an unknown case is NotFound (404), and another tenant's case is unknown", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const missing = generateCaseId()
            assertError(
              yield* Effect.flip(f.as("rita").cases.read({ path: { case: missing } })),
              new NotFound({ what: missing }),
            )
            const theirs = yield* f.inTenant(opened([CorrelationKey.make("claim", "B-1")], 1_000), f.otherTenant)
            const refused = yield* Effect.flip(f.as("rita").cases.read({ path: { case: theirs } }))
            assert.strictEqual(refused._tag, "NotFound")
            assert.strictEqual((yield* f.as("bob").cases.read({ path: { case: theirs } })).case.id, theirs)
          }),
        ),
      )

      it.effect("GET /obligations lists breached deadlines, longest overdue first", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const kase = yield* f.inTenant(
              Effect.gen(function* () {
                const store = yield* CaseStore
                const kase = yield* opened([CorrelationKey.make("claim", "C-5")], 1_000)
                yield* store.registerDeadline(deadline(kase, "late", 3_000, "breached"))
                yield* store.registerDeadline(deadline(kase, "later", 2_000, "breached"))
                yield* store.registerDeadline(deadline(kase, "fine", 2_500, "pending"))
                return kase
              }),
            )
            const breached = yield* f.as("rita").cases.obligations({ urlParams: { limit: 10 } })
            assert.deepStrictEqual(
              breached.items.map((d) => [d.case, d.name]),
              [
                [kase, "later"],
                [kase, "late"],
              ],
            )
            assert.deepStrictEqual(yield* f.as("bob").cases.obligations({ urlParams: {} }), {
              items: [],
              truncated: false,
            })
          }),
        ),
      )
    })
  })
}
