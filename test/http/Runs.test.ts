/**
 * The run routes (§8.2) on each backend: one run's definition and version (§7.13), head, outcome, case and suspend reason as it
 * waits and once it finished; runs by outcome; the cancellation request (202) honoured at the
 * run's wait; unknown runs and another tenant's runs are 404.
 */
import { describe, layer } from "@effect/vitest"
import { Effect, Option } from "effect"
import { generateRunId, StepId } from "../../src/domain/Ids.js"
import * as Journal from "../../src/domain/Journal.js"
import type { Forbidden } from "../../src/http/Authorizer.js"
import * as RunDefinition from "../../src/runtime/RunDefinition.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import { assert } from "../support/Assert.js"
import * as Http from "../support/Http.js"
import * as Definitions from "./Definitions.js"

const paid = (f: Http.Fixture, invoice: string) =>
  f.raw("POST", "/events", {
    as: "pat",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      id: `paid-${invoice}`,
      kind: "invoice.paid",
      correlation: [{ namespace: "subject", value: invoice }],
      payload: { paid: 40 },
    }),
  })

for (const backend of Http.backends()) {
  describe(`http runs (${backend.name})`, () => {
    layer(backend.layer, { excludeTestServices: true })((it) => {
      it.effect("GET /runs/{run} shows a waiting run's reason and case, then its outcome once it finished", () =>
        Http.withServer(
          (f) =>
            Effect.gen(function* () {
              const invoice = `INV-${Math.random()}`
              const started = yield* f.inTenant(Definitions.start(f.runtime, Definitions.awaitsPayment, invoice))
              const waiting = yield* f.as("rita").runs.read({ path: { run: started.run } })
              const head = yield* f.inTenant(Effect.flatMap(JournalStore, (j) => j.head(started.run)))
              assert.deepStrictEqual(waiting.head, { seq: head.seq, hash: head.hash })
              assert.deepStrictEqual(
                [waiting.run, waiting.outcome, waiting.case],
                [started.run, Option.none(), started.case],
              )
              const reason = Option.getOrThrow(waiting.suspended)
              assert.deepStrictEqual(
                reason.reason === "awaiting_event" ? [reason.reason, reason.kind] : [reason.reason],
                ["awaiting_event", "invoice.paid"],
              )
              assert.strictEqual((yield* paid(f, invoice)).status, 202)
              yield* f.runtime.idle
              const done = yield* f.as("rita").runs.read({ path: { run: started.run } })
              assert.deepStrictEqual(
                [done.outcome, done.suspended, done.case, done.reason],
                [Option.some("succeeded" as const), Option.none(), started.case, Option.none()],
              )
              assert.isTrue(done.head.seq > waiting.head.seq)
            }),
          { definitions: [Definitions.awaitsPayment] },
        ),
      )

      it.effect("GET /runs/{run} names the definition, version and shape digest the run was admitted under", () =>
        Http.withServer(
          (f) =>
            Effect.gen(function* () {
              const started = yield* f.inTenant(
                Definitions.start(f.runtime, Definitions.awaitsPayment, `INV-${Math.random()}`),
              )
              const read = yield* f.as("rita").runs.read({ path: { run: started.run } })
              const digest = Option.getOrThrow(
                Option.fromNullable(RunDefinition.shapeDigest(Definitions.awaitsPayment)),
              )
              assert.match(digest, /^[0-9a-f]{64}$/)
              assert.deepStrictEqual(
                read.definition,
                Option.some({
                  name: "http-test.await",
                  version: Option.some("2026-12-a"),
                  digest: Option.some(digest),
                }),
              )
              // As the journal holds it, and as the wire carries it.
              const records = yield* f.inTenant(Effect.flatMap(JournalStore, (j) => j.read(started.run, 1)))
              const admitted = records[0]?.kind
              assert.deepStrictEqual(
                admitted?.kind === "RunAdmitted" ? [admitted.definition_version, admitted.definition_digest] : [],
                ["2026-12-a", digest],
              )
              const raw = yield* f.raw("GET", `/runs/${started.run}`, { as: "rita" })
              assert.deepStrictEqual((raw.json as { readonly definition?: unknown }).definition, {
                name: "http-test.await",
                version: "2026-12-a",
                digest,
              })
            }),
          { definitions: [Definitions.awaitsPayment] },
        ),
      )

      it.effect("GET /runs/{run} of a run admitted before versions were recorded shows its name and null version", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const run = generateRunId()
            // A journal as an earlier build wrote it: RunAdmitted without the definition's version or digest.
            yield* f.inTenant(
              Effect.gen(function* () {
                const journal = yield* JournalStore
                const lease = yield* journal.acquire(run, "old-build", 30)
                yield* journal.append(run, lease.epoch, [
                  Journal.built({
                    case: Option.none(),
                    step: StepId.make(0),
                    phase: "forward",
                    effectKey: Option.none(),
                    kind: {
                      kind: "RunAdmitted",
                      capability: "http-test.old",
                      input: {},
                      input_label: "test",
                      policy_bundle: "allow-all",
                      canon: 1,
                    },
                  }),
                ])
              }),
            )
            const read = yield* f.as("rita").runs.read({ path: { run } })
            assert.deepStrictEqual(
              read.definition,
              Option.some({ name: "http-test.old", version: Option.none(), digest: Option.none() }),
            )
            const raw = yield* f.raw("GET", `/runs/${run}`, { as: "rita" })
            assert.deepStrictEqual((raw.json as { readonly definition?: unknown }).definition, {
              name: "http-test.old",
              version: null,
              digest: null,
            })
          }),
        ),
      )

      it.effect("GET /runs/{run} of a quarantined run says why: the effect, its key, the step and the cause", () =>
        Http.withServer(
          (f) =>
            Effect.gen(function* () {
              const started = yield* f.inTenant(
                Definitions.start(f.runtime, Definitions.quarantines, `INV-${Math.random()}`),
              )
              const read = yield* f.as("rita").runs.read({ path: { run: started.run } })
              assert.deepStrictEqual(read.outcome, Option.some("quarantined" as const))
              const reason = Option.getOrThrow(read.reason)
              assert.isTrue(reason.includes("http-test.charge ek:"), reason)
              assert.isTrue(reason.includes("died in doubt; its recovery is RequiresOperator"), reason)
              assert.isTrue(reason.includes("(step 0 charge, forward)"), reason)
              // The operator's list of runs that need a person names it.
              const listed = yield* f.as("rita").runs.list({ urlParams: {} })
              assert.deepStrictEqual(listed.items, [started.run])
            }),
          { definitions: [Definitions.quarantines] },
        ),
      )

      it.effect("GET /runs lists runs by outcome, newest first; the default is quarantined", () =>
        Http.withServer(
          (f) =>
            Effect.gen(function* () {
              const finished = []
              for (const n of [1, 2]) {
                const invoice = `INV-${n}-${Math.random()}`
                finished.push((yield* f.inTenant(Definitions.start(f.runtime, Definitions.awaitsPayment, invoice))).run)
                yield* paid(f, invoice)
                yield* f.runtime.idle
              }
              const listed = yield* f.as("rita").runs.list({ urlParams: { outcome: "succeeded", limit: 10 } })
              assert.deepStrictEqual(listed, { items: [...finished].reverse(), truncated: false })
              const one = yield* f.as("rita").runs.list({ urlParams: { outcome: "succeeded", limit: 1 } })
              assert.deepStrictEqual(one, { items: [...finished].reverse().slice(0, 1), truncated: true })
              assert.deepStrictEqual(yield* f.as("rita").runs.list({ urlParams: {} }), { items: [], truncated: false })
              // Tenant B sees none of them.
              assert.deepStrictEqual(yield* f.as("bob").runs.list({ urlParams: { outcome: "succeeded" } }), {
                items: [],
                truncated: false,
              })
              const bad = yield* f.raw("GET", "/runs?outcome=bogus", { as: "rita" })
              assert.strictEqual(bad.status, 422)
            }),
          { definitions: [Definitions.awaitsPayment] },
        ),
      )

      it.effect(
        "POST /runs/{run}/cancel is 202 {requested}; the waiting run is cancelled at its wait; then 409 RunClosed",
        () =>
          Http.withServer(
            (f) =>
              Effect.gen(function* () {
                const started = yield* f.inTenant(
                  Definitions.start(f.runtime, Definitions.awaitsPayment, `INV-${Math.random()}`),
                )
                const first = yield* f.raw("POST", `/runs/${started.run}/cancel`, {
                  as: "rita",
                  headers: { "content-type": "application/json" },
                  body: JSON.stringify({ reason: "customer withdrew" }),
                })
                assert.deepStrictEqual([first.status, first.json], [202, { requested: true }])
                yield* f.runtime.idle
                const cancellation = yield* f.inTenant(Effect.flatMap(JournalStore, (j) => j.cancellation(started.run)))
                assert.deepStrictEqual(
                  Option.map(cancellation, (c) => [c.actor, c.reason]),
                  Option.some(["rita", "customer withdrew"]),
                )
                const read = yield* f.as("rita").runs.read({ path: { run: started.run } })
                assert.deepStrictEqual(read.outcome, Option.some("cancelled" as const))
                // Sealed now: a further request is refused, not acknowledged.
                const late = yield* f.raw("POST", `/runs/${started.run}/cancel`, {
                  as: "rita",
                  headers: { "content-type": "application/json" },
                  body: JSON.stringify({ reason: "once more" }),
                })
                assert.deepStrictEqual(
                  [late.status, (late.json as { readonly _tag?: string; readonly outcome?: string })._tag],
                  [409, "RunClosed"],
                )
                assert.deepStrictEqual(read.reason, Option.some("cancelled by rita: customer withdrew"))
                // The body names no actor: the actor is the caller.
                const named = yield* f.raw("POST", `/runs/${started.run}/cancel`, {
                  as: "rita",
                  headers: { "content-type": "application/json" },
                  body: JSON.stringify({ reason: "x", actor: "mallory" }),
                })
                assert.strictEqual(named.status, 422)
              }),
            { definitions: [Definitions.awaitsPayment] },
          ),
      )

      it.effect(
        "an unknown run and another tenant's run are 404 to read and to cancel; a role without the action is 403",
        () =>
          Http.withServer(
            (f) =>
              Effect.gen(function* () {
                const started = yield* f.inTenant(
                  Definitions.start(f.runtime, Definitions.awaitsPayment, `INV-${Math.random()}`),
                )
                for (const run of [generateRunId(), started.run]) {
                  const as = run === started.run ? "bob" : "rita"
                  const read = yield* f.raw("GET", `/runs/${run}`, { as })
                  assert.deepStrictEqual([read.status, (read.json as { _tag: string })._tag], [404, "NotFound"])
                  const cancel = yield* f.raw("POST", `/runs/${run}/cancel`, {
                    as,
                    headers: { "content-type": "application/json" },
                    body: JSON.stringify({ reason: "not yours" }),
                  })
                  assert.deepStrictEqual([cancel.status, (cancel.json as { _tag: string })._tag], [404, "NotFound"])
                }
                // Bob's attempt stored no request against tenant A's run.
                const cancellation = yield* f.inTenant(Effect.flatMap(JournalStore, (j) => j.cancellation(started.run)))
                assert.isTrue(Option.isNone(cancellation))
                const refused = yield* Effect.flip(
                  f.as("pat").runs.cancel({ path: { run: started.run }, payload: { reason: "agent" } }),
                )
                assert.deepStrictEqual(
                  [(refused as Forbidden)._tag, (refused as Forbidden).action],
                  ["Forbidden", "api:run.cancel"],
                )
              }),
            { definitions: [Definitions.awaitsPayment] },
          ),
      )
    })
  })
}
