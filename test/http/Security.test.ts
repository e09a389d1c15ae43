/**
 * The operator API's security acceptance (§8.1), against a real server on 127.0.0.1 on each
 * backend: no credential is 401, tenants never see each other's rows, four-eyes holds over HTTP,
 * a body never names an actor, and only an admin halts.
 */
import { describe, layer } from "@effect/vitest"
import { Effect, Metric, Option } from "effect"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import * as Deadline from "../../src/domain/Deadline.js"
import * as Digest from "../../src/domain/Digest.js"
import { InboundEvent } from "../../src/domain/Event.js"
import type { TaskId } from "../../src/domain/TaskId.js"
import * as Time from "../../src/domain/Time.js"
import { Excluded, TaskNotFound } from "../../src/errors/ClaimError.js"
import { NotFound } from "../../src/errors/StoreError.js"
import { Unauthorized } from "../../src/http/Authentication.js"
import * as Authorizer from "../../src/http/Authorizer.js"
import { type Action, Forbidden } from "../../src/http/Authorizer.js"
import { Caller } from "../../src/http/Caller.js"
import { callerSource } from "../../src/http/CloudEvents.js"
import * as Tasks from "../../src/runtime/Worklist.js"
import { CaseStore } from "../../src/services/CaseStore.js"
import { EventStore } from "../../src/services/EventStore.js"
import { QuotaStore } from "../../src/services/QuotaStore.js"
import { TaskStore } from "../../src/services/TaskStore.js"
import { task as taskRecord } from "../conformance/task/Fixtures.js"
import { assert } from "../support/Assert.js"
import { assertError } from "../support/Errors.js"
import * as Http from "../support/Http.js"

const NOW = Time.Timestamp.make(1_800_000_000)

/** Opens a task in `tenant` (A by default) through the store. */
const open = (f: Http.Fixture, shape: Parameters<typeof taskRecord>[0] = {}, tenant = f.tenant) =>
  f.inTenant(
    Effect.flatMap(TaskStore, (store) => store.open(taskRecord(shape))),
    tenant,
  )

const stored = (f: Http.Fixture, id: TaskId, tenant = f.tenant) =>
  f
    .inTenant(
      Effect.flatMap(TaskStore, (store) => store.task(id)),
      tenant,
    )
    .pipe(Effect.map(Option.getOrThrow))

/** A case in `tenant`, escalated, with a breached obligation. */
const escalatedCase = (f: Http.Fixture, tenant: typeof f.tenant, key: string) =>
  f.inTenant(
    Effect.gen(function* () {
      const cases = yield* CaseStore
      const opened = yield* cases.correlateOrOpen("dispute", [CorrelationKey.make("invoice", key)], NOW)
      yield* cases.setStatus(opened.case, "escalated")
      yield* cases.registerDeadline(
        new Deadline.Deadline({
          case: opened.case,
          name: "answer",
          resolvedAt: NOW,
          calendarDigest: Digest.of("test"),
          warnAt: Option.none(),
          state: "pending",
        }),
      )
      yield* cases.setDeadlineState(opened.case, "answer", "breached")
      return opened.case
    }),
    tenant,
  )

/** Whether the decision event of `task` was ever accepted in `tenant` (the probe writes nothing when it was not). */
const decisionDelivered = (f: Http.Fixture, task: TaskId) =>
  f.inTenant(
    Effect.flatMap(EventStore, (events) => events.erasePayload(Tasks.WORKLIST_SOURCE, `task-decision:${task}`)),
  )

const halted = (f: Http.Fixture, tenant = f.tenant) =>
  f.inTenant(
    Effect.flatMap(QuotaStore, (quota) => quota.halted()),
    tenant,
  )

const denials = (action: Action) =>
  Effect.map(Metric.value(Metric.tagged(Authorizer.denials, "action", action)), (state) => state.count)

/** Every authenticated route, with a well-formed path and body, so only the credential can refuse it. */
const routes = (task: TaskId, kase: string) =>
  [
    ["GET", "/tasks", undefined],
    ["GET", `/tasks/task_${task}`, undefined],
    ["POST", `/tasks/task_${task}/claim`, undefined],
    ["POST", `/tasks/task_${task}/release`, undefined],
    ["POST", `/tasks/task_${task}/takeover`, { from: "rita" }],
    ["POST", `/tasks/task_${task}/decide`, { approved: true, reason: "ok" }],
    ["GET", "/cases", undefined],
    ["GET", `/cases/${kase}`, undefined],
    ["GET", "/obligations", undefined],
    ["POST", "/events", { id: "e-1", kind: "invoice.paid" }],
    ["GET", "/dead-letters", undefined],
    ["GET", "/census", undefined],
    ["GET", "/metrics", undefined],
    ["PUT", "/admin/halt", { reason: "stop" }],
    ["DELETE", "/admin/halt", undefined],
  ] as const

const json = { "content-type": "application/json" }

for (const backend of Http.backends()) {
  describe(`http security (${backend.name})`, () => {
    layer(backend.layer, { excludeTestServices: true })((it) => {
      it.effect("no credential, an unknown one or another scheme is 401 on every route, echoing no token", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const t = yield* open(f)
            const kase = yield* escalatedCase(f, f.tenant, "INV-401")
            const presented = {
              none: {},
              unknown: { authorization: "Bearer tok-0000000000000000" },
              empty: { authorization: "Bearer " },
              // "Digest " is as long as "Bearer ": only the scheme tells them apart.
              otherScheme: { authorization: `Digest ${f.tokens.ada}` },
              noScheme: { authorization: f.tokens.ada },
            }
            for (const [method, path, body] of routes(t.id, kase)) {
              for (const [label, headers] of Object.entries(presented)) {
                const response = yield* f.raw(method, path, {
                  headers: { ...headers, ...(body === undefined ? {} : json) },
                  ...(body === undefined ? {} : { body: JSON.stringify(body) }),
                })
                const where = `${method} ${path} with ${label}`
                assert.strictEqual(response.status, 401, where)
                assert.strictEqual((response.json as { _tag?: unknown })._tag, "Unauthorized", where)
                assert.isFalse(response.text.includes(f.tokens.ada), where)
                assert.isFalse(response.text.includes("tok-0000000000000000"), where)
              }
            }
            // Through the derived client as well, and nothing was written on the way.
            assertError(
              yield* Effect.flip(f.as(undefined).tasks.list({ urlParams: { limit: 50 } })),
              new Unauthorized({ message: "missing credential: send Authorization: Bearer <token>" }),
            )
            assertError(
              yield* Effect.flip(f.stranger.admin.halt({ payload: { reason: "stop" } })),
              new Unauthorized({ message: "unknown credential" }),
            )
            assert.deepStrictEqual(yield* halted(f), Option.none())
            assert.deepStrictEqual((yield* stored(f, t.id)).state, "open")
            // The health check stays public.
            assert.strictEqual((yield* f.raw("GET", "/healthz")).status, 200)
          }),
        ),
      )

      it.effect("tenant A's key never sees, claims or decides tenant B's tasks", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const mine = yield* open(f)
            const theirs = yield* open(f, {}, f.otherTenant)
            const rita = f.as("rita")
            const listed = yield* rita.tasks.list({ urlParams: { limit: 50 } })
            assert.deepStrictEqual(
              listed.items.map((t) => t.id),
              [mine.id],
            )
            const notFound = new TaskNotFound({ task: theirs.id })
            const path = { task: theirs.id }
            assertError(yield* Effect.flip(rita.tasks.read({ path })), notFound)
            assertError(yield* Effect.flip(rita.tasks.claim({ path })), notFound)
            assertError(
              yield* Effect.flip(
                rita.tasks.decide({ path, payload: { approved: true, reason: "x", amendment: null } }),
              ),
              notFound,
            )
            assertError(yield* Effect.flip(rita.tasks.release({ path })), notFound)
            assertError(yield* Effect.flip(rita.tasks.takeover({ path, payload: { from: "bob" } })), notFound)
            assert.deepStrictEqual(yield* stored(f, theirs.id, f.otherTenant), theirs)
            // And the other way round.
            const bobs = yield* f.as("bob").tasks.list({ urlParams: { limit: 50 } })
            assert.deepStrictEqual(
              bobs.items.map((t) => t.id),
              [theirs.id],
            )
            assertError(
              yield* Effect.flip(f.as("bob").tasks.read({ path: { task: mine.id } })),
              new TaskNotFound({ task: mine.id }),
            )
          }),
        ),
      )

      it.effect("no tenant's credential reads /metrics; the scrape credential's page names no tenant", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            yield* open(f)
            for (let i = 0; i < 3; i++) yield* open(f, {}, f.otherTenant)
            for (const name of ["rita", "ada", "bob"] as const) {
              const refused = yield* f.raw("GET", "/metrics", { as: name })
              assert.strictEqual(refused.status, 401, name)
              assert.isFalse(refused.text.includes("agentplane_"), name)
            }
            const text = yield* f.scraper.health.metrics()
            // The process's page: both tenants' tasks, summed, and neither tenant named.
            assert.match(text, /^agentplane_tasks_open 4$/m)
            assert.isFalse(text.includes(f.tenant) || text.includes(f.otherTenant))
          }),
        ),
      )

      it.effect("tenant A's key never sees tenant B's cases or obligations", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const mine = yield* escalatedCase(f, f.tenant, "INV-1")
            const theirs = yield* escalatedCase(f, f.otherTenant, "INV-1")
            const rita = f.as("rita")
            const listed = yield* rita.cases.list({ urlParams: { status: "escalated", limit: 50 } })
            assert.deepStrictEqual(
              listed.items.map((c) => c.id),
              [mine],
            )
            assertError(yield* Effect.flip(rita.cases.read({ path: { case: theirs } })), new NotFound({ what: theirs }))
            const breached = yield* rita.cases.obligations({ urlParams: { limit: 50 } })
            assert.deepStrictEqual(
              breached.items.map((d) => d.case),
              [mine],
            )
            assert.strictEqual((yield* f.as("bob").cases.read({ path: { case: theirs } })).case.id, theirs)
          }),
        ),
      )

      it.effect("tenant A's key never sees tenant B's events or dead letters, nor shares their dedup", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            // B holds an event with the very source and id A's producer is about to send.
            const asPatInB = new Caller({ tenant: f.otherTenant, actor: "pat", roles: ["producer"] })
            const twin = new InboundEvent({
              source: callerSource(asPatInB),
              id: "e-42",
              kind: "invoice.paid",
              correlation: [],
              payload: { secret: "tenant B" },
            })
            yield* f.inTenant(
              Effect.flatMap(EventStore, (events) => events.buffer(twin, NOW)),
              f.otherTenant,
            )
            const sent = yield* f
              .as("pat")
              .events.deliver({ payload: { id: "e-42", kind: "invoice.paid", correlation: [], payload: { n: 1 } } })
            assert.deepStrictEqual(sent, { result: "buffered" })
            // Unclaimed events of both tenants go dead; each tenant's list shows its own only.
            for (const tenant of [f.tenant, f.otherTenant]) {
              yield* f.inTenant(
                Effect.flatMap(EventStore, (events) =>
                  events.sweepUnclaimed(Time.Timestamp.make(4_000_000_000), "test"),
                ),
                tenant,
              )
            }
            const aLetters = yield* f.as("rita").operations.deadLetters({ urlParams: { limit: 50 } })
            assert.deepStrictEqual(
              aLetters.items.map((l) => l.event.payload),
              [{ n: 1 }],
            )
            const bLetters = yield* f.as("bob").operations.deadLetters({ urlParams: { limit: 50 } })
            assert.deepStrictEqual(
              bLetters.items.map((l) => l.event.payload),
              [{ secret: "tenant B" }],
            )
          }),
        ),
      )

      it.effect("an excluded actor can neither claim nor decide, and nothing is written", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const t = yield* open(f, { candidateRoles: ["reviewer"], excludedActors: ["sam"] })
            const path = { task: t.id }
            const sam = f.as("sam")
            assertError(yield* Effect.flip(sam.tasks.claim({ path })), new Excluded({ actor: "sam" }))
            assertError(
              yield* Effect.flip(
                sam.tasks.decide({ path, payload: { approved: true, reason: "mine", amendment: null } }),
              ),
              new Excluded({ actor: "sam" }),
            )
            const raw = yield* f.raw("POST", `/tasks/task_${t.id}/decide`, {
              as: "sam",
              headers: json,
              body: JSON.stringify({ approved: true, reason: "mine" }),
            })
            assert.strictEqual(raw.status, 403)
            assert.deepStrictEqual(yield* stored(f, t.id), t)
            assert.isFalse(yield* decisionDelivered(f, t.id))
            // Nor can sam take it over from the reviewer who claimed it.
            yield* f.as("rita").tasks.claim({ path })
            assertError(
              yield* Effect.flip(sam.tasks.takeover({ path, payload: { from: "rita" } })),
              new Excluded({ actor: "sam" }),
            )
            // The same task is open to a reviewer who is not excluded.
            const decided = yield* f
              .as("rita")
              .tasks.decide({ path, payload: { approved: true, reason: "checked", amendment: null } })
            assert.strictEqual(decided.task.state, "completed")
            assert.isTrue(yield* decisionDelivered(f, t.id))
          }),
        ),
      )

      it.effect("no producer can forge a task decision by posting the plane's own event kind", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const t = yield* open(f)
            const hex = t.id.replace(/^task_/, "")
            const forged = {
              id: "forged-1",
              kind: Tasks.DECIDED_KIND,
              correlation: [{ namespace: "task", value: hex }],
              payload: { approved: true, reason: "self-approved", actor: "pat", amendment: null },
            }
            for (const as of ["pat", "ada"] as const) {
              const answer = yield* f.raw("POST", "/events", {
                as,
                headers: { "content-type": "application/json" },
                body: JSON.stringify(forged),
              })
              assert.strictEqual(answer.status, 422, answer.text)
              assert.match(answer.text, /reserved/)
            }
            const cloudEvent = yield* f.raw("POST", "/events", {
              as: "pat",
              headers: { "content-type": "application/cloudevents+json" },
              body: JSON.stringify({
                specversion: "1.0",
                id: "forged-2",
                source: "urn:x",
                type: Tasks.DECIDED_KIND,
                subject: hex,
                data: forged.payload,
              }),
            })
            assert.strictEqual(cloudEvent.status, 422, cloudEvent.text)
            // Nothing was buffered: both events are still new to the store.
            for (const id of ["forged-1", "urn:x\u001fforged-2"]) {
              assert.isTrue(
                yield* f.inTenant(
                  Effect.flatMap(EventStore, (events) =>
                    events.buffer(
                      new InboundEvent({
                        source: callerSource(new Caller({ tenant: f.tenant, actor: "pat", roles: ["producer"] })),
                        id,
                        kind: Tasks.DECIDED_KIND,
                        correlation: [CorrelationKey.make("task", hex)],
                        payload: null,
                      }),
                      NOW,
                    ),
                  ),
                ),
              )
            }
            assert.deepStrictEqual(yield* stored(f, t.id), t)
          }),
        ),
      )

      it.effect("a body that names an actor or roles is refused (422) before anything is written", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const t = yield* open(f, { excludedActors: ["sam"] })
            // Each body is sent by callers the route admits (sam is excluded from the task, ada is
            // the admin), so only the field can refuse it: naming another actor must not help.
            const reviewers = ["sam", "ada"] as const
            const refused = [
              [
                `/tasks/task_${t.id}/decide`,
                "POST",
                { approved: true, reason: "ok", actor: "rita" },
                "actor",
                reviewers,
              ],
              [
                `/tasks/task_${t.id}/decide`,
                "POST",
                { approved: true, reason: "ok", roles: ["admin"] },
                "roles",
                reviewers,
              ],
              [`/tasks/task_${t.id}/takeover`, "POST", { from: "rita", actor: "rita" }, "actor", reviewers],
              ["/admin/halt", "PUT", { reason: "stop", actor: "ada" }, "actor", ["ada"]],
              ["/events", "POST", { id: "e-1", kind: "invoice.paid", actor: "rita" }, "actor", ["pat", "ada"]],
            ] as const
            for (const [path, method, body, field, senders] of refused) {
              for (const as of senders) {
                const response = yield* f.raw(method, path, { as, headers: json, body: JSON.stringify(body) })
                const where = `${method} ${path} naming ${field} as ${as}`
                assert.strictEqual(response.status, 422, where)
                const error = response.json as { _tag?: unknown; message?: unknown }
                assert.strictEqual(error._tag, "InvalidRequest", where)
                assert.match(String(error.message), new RegExp(field), where)
              }
            }
            assert.deepStrictEqual(yield* stored(f, t.id), t)
            assert.isFalse(yield* decisionDelivered(f, t.id))
            assert.deepStrictEqual(yield* halted(f), Option.none())
          }),
        ),
      )

      it.effect("a key without the admin role cannot halt or unhalt; an admin's halt is its tenant's only", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const before = yield* denials("api:admin.halt")
            for (const name of ["rita", "sam", "pat", "nobody"] as const) {
              assertError(
                yield* Effect.flip(f.as(name).admin.halt({ payload: { reason: "stop" } })),
                new Forbidden({
                  action: "api:admin.halt",
                  message: "no policy permits api:admin.halt",
                }),
              )
              const raw = yield* f.raw("PUT", "/admin/halt", {
                as: name,
                headers: json,
                body: JSON.stringify({ reason: "stop" }),
              })
              assert.strictEqual(raw.status, 403, name)
            }
            assert.deepStrictEqual(yield* halted(f), Option.none())
            assert.strictEqual((yield* denials("api:admin.halt")) - before, 8)
            // The admin may; bob's halt stops tenant B only, and a reviewer cannot lift A's.
            yield* f.as("ada").admin.halt({ payload: { reason: "incident 7" } })
            assert.deepStrictEqual(yield* halted(f), Option.some("incident 7"))
            assert.deepStrictEqual(yield* halted(f, f.otherTenant), Option.none())
            yield* f.as("bob").admin.halt({ payload: { reason: "theirs" } })
            assert.deepStrictEqual(yield* halted(f), Option.some("incident 7"))
            assert.strictEqual((yield* f.raw("DELETE", "/admin/halt", { as: "rita" })).status, 403)
            assert.deepStrictEqual(yield* halted(f), Option.some("incident 7"))
          }),
        ),
      )

      it.effect("deny by default: a caller whose roles no rule lists is refused everywhere", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const t = yield* open(f)
            const kase = yield* escalatedCase(f, f.tenant, "INV-403")
            for (const [method, path, body] of routes(t.id, kase)) {
              const response = yield* f.raw(method, path, {
                as: "nobody",
                headers: body === undefined ? {} : json,
                ...(body === undefined ? {} : { body: JSON.stringify(body) }),
              })
              // `/metrics` takes only the scrape credential: a tenant's is not one at all (401).
              const [status, tag] = path === "/metrics" ? [401, "Unauthorized"] : [403, "Forbidden"]
              assert.strictEqual(response.status, status, `${method} ${path}`)
              assert.strictEqual((response.json as { _tag?: unknown })._tag, tag, `${method} ${path}`)
            }
            assert.deepStrictEqual(yield* stored(f, t.id), t)
          }),
        ),
      )
    })
  })
}
