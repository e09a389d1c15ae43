/**
 * `POST /runs` on each backend: the refusals (unknown definition, bad input, bad admission key,
 * a tenant in the body, a caller without `api:run.start`) store nothing; the tenant is the
 * credential's; a retry under the same admission key answers the same run and admits nothing.
 *
 * The server here is built with `startable` (the shared `Http.withServer` offers no such option),
 * from the same credential table, policy and callers.
 */
import { randomBytes } from "node:crypto"
import { HttpServer } from "@effect/platform"
import { describe, layer } from "@effect/vitest"
import { Context, Effect, Layer, Logger, LogLevel, Option } from "effect"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import type { RunId } from "../../src/domain/Ids.js"
import { Tenant, type TenantId } from "../../src/domain/Tenant.js"
import * as Credentials from "../../src/http/Credentials.js"
import * as Readiness from "../../src/http/Readiness.js"
import * as Server from "../../src/http/Server.js"
import * as RunDefinition from "../../src/runtime/RunDefinition.js"
import { Runtime } from "../../src/runtime/Runtime.js"
import { CaseStore } from "../../src/services/CaseStore.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import * as PolicyEngine from "../../src/services/PolicyEngine.js"
import type * as Stores from "../../src/services/Stores.js"
import { assert } from "../support/Assert.js"
import * as Backend from "../support/Backend.js"
import * as Http from "../support/Http.js"
import * as RoutePolicy from "../support/RoutePolicy.js"
import * as Definitions from "./Definitions.js"

interface Answer {
  readonly status: number
  readonly json: unknown
}

interface Served {
  readonly tenant: TenantId
  readonly otherTenant: TenantId
  readonly post: (as: Http.CallerName, path: string, body: unknown) => Effect.Effect<Answer>
  readonly get: (as: Http.CallerName, path: string) => Effect.Effect<Answer>
  readonly runtime: Runtime["Type"]
  readonly inTenant: <A, E, R>(
    effect: Effect.Effect<A, E, R>,
    tenant?: TenantId,
  ) => Effect.Effect<A, E, Exclude<R, Tenant>>
}

/** A server starting `awaitsPayment`, for the duration of `body`, over the test's stores. */
const serving = <A, E>(body: (s: Served) => Effect.Effect<A, E, Stores.Stores>) =>
  Effect.scoped(
    Effect.gen(function* () {
      const tenant = Backend.freshTenant()
      const otherTenant = Backend.freshTenant()
      const names = Object.keys(Http.callers) as Array<Http.CallerName>
      const tokens = Object.fromEntries(names.map((n) => [n, `tok-${randomBytes(16).toString("hex")}`])) as Record<
        Http.CallerName,
        string
      >
      const entries = names.map((name) => ({
        digest: Credentials.digest(tokens[name]),
        tenant: Http.callers[name].tenant === "a" ? tenant : otherTenant,
        actor: name,
        roles: [...Http.callers[name].roles],
      }))
      const def = Definitions.awaitsPayment
      const server = Server.layer({
        host: "127.0.0.1",
        port: 0,
        definitions: RunDefinition.register(def) as Layer.Layer<never, never, RunDefinition.Registry>,
        startable: [def],
        readiness: Readiness.layerAlways,
      }).pipe(
        Layer.provide(Credentials.layerEntries(entries, "test")),
        Layer.provide(RoutePolicy.layer),
        Layer.provide(PolicyEngine.allowAll),
        Layer.provide(Layer.effectContext(Effect.context<Stores.Stores>())),
      )
      const context = yield* Layer.build(server)
      const address = Context.get(context, HttpServer.HttpServer).address
      if (address._tag !== "TcpAddress") return yield* Effect.dieMessage("expected a TCP address")
      const call = (method: string, as: Http.CallerName, path: string, payload?: unknown) =>
        Effect.promise(async () => {
          const response = await fetch(`http://127.0.0.1:${address.port}${path}`, {
            method,
            headers: { authorization: `Bearer ${tokens[as]}`, "content-type": "application/json" },
            ...(payload === undefined ? {} : { body: JSON.stringify(payload) }),
          })
          const text = await response.text()
          return { status: response.status, json: text === "" ? undefined : JSON.parse(text) }
        })
      return yield* body({
        tenant,
        otherTenant,
        post: (as, path, payload) => call("POST", as, path, payload),
        get: (as, path) => call("GET", as, path),
        runtime: Context.get(context, Runtime),
        inTenant: (effect, t = tenant) => Effect.provideService(effect, Tenant, t),
      })
    }),
  ).pipe(Effect.provide(Logger.minimumLogLevel(LogLevel.Warning)))

const startBody = (invoice: string, extra: Record<string, unknown> = {}) => ({
  capability: Definitions.awaitsPayment.capability,
  input: { invoice },
  case: { kind: "invoice", correlation: [{ namespace: "invoice", value: invoice }] },
  ...extra,
})

const tagOf = (a: Answer) => (a.json as { readonly _tag?: string } | undefined)?._tag
const messageOf = (a: Answer) => (a.json as { readonly message?: string } | undefined)?.message ?? ""

/** The case the invoice's key names in the tenant, if a start opened one. */
const caseOf = (s: Served, invoice: string, tenant?: TenantId) =>
  s.inTenant(
    Effect.flatMap(CaseStore, (c) => c.correlate([CorrelationKey.make("invoice", invoice)])),
    tenant,
  )

for (const backend of Http.backends()) {
  describe(`http POST /runs (${backend.name})`, () => {
    layer(backend.layer, { excludeTestServices: true })((it) => {
      it.effect("refuses an unknown definition, a bad input and a bad admission key with 422, starting nothing", () =>
        serving((s) =>
          Effect.gen(function* () {
            const invoice = `INV-${Math.random()}`
            const unknown = yield* s.post("rita", "/runs", { ...startBody(invoice), capability: "no.such.run" })
            assert.deepStrictEqual([unknown.status, tagOf(unknown)], [422, "InvalidRequest"])
            assert.isTrue(
              messageOf(unknown).includes(`it starts ${Definitions.awaitsPayment.capability}`),
              messageOf(unknown),
            )
            for (const [input, field] of [
              [{}, "input.invoice"],
              [{ invoice: 7 }, "input.invoice"],
              [{ invoice: "x", extra: true }, "input.extra"],
            ] as const) {
              const bad = yield* s.post("rita", "/runs", { ...startBody(invoice), input })
              assert.deepStrictEqual([bad.status, tagOf(bad)], [422, "InvalidRequest"])
              assert.isTrue(messageOf(bad).includes(field), messageOf(bad))
            }
            for (const admissionKey of ["", "k".repeat(1000), 7, "a\u0000b"]) {
              const bad = yield* s.post("rita", "/runs", startBody(invoice, { admissionKey }))
              assert.strictEqual(bad.status, 422, `admission key ${JSON.stringify(admissionKey).slice(0, 20)}`)
            }
            // None of them opened the case or wrote a run.
            assert.isTrue(Option.isNone(yield* caseOf(s, invoice)))
          }),
        ),
      )

      it.effect(
        "the tenant is the credential's: a tenant in the body is refused, and a start lands in the caller's tenant only",
        () =>
          serving((s) =>
            Effect.gen(function* () {
              const invoice = `INV-${Math.random()}`
              const smuggled = yield* s.post("bob", "/runs", startBody(invoice, { tenant: s.tenant }))
              assert.deepStrictEqual([smuggled.status, tagOf(smuggled)], [422, "InvalidRequest"])
              assert.isTrue(Option.isNone(yield* caseOf(s, invoice)))
              assert.isTrue(Option.isNone(yield* caseOf(s, invoice, s.otherTenant)))
              const started = yield* s.post("bob", "/runs", startBody(invoice))
              assert.strictEqual(started.status, 201)
              const run = (started.json as { readonly run: RunId }).run
              assert.deepStrictEqual((yield* s.get("bob", `/runs/${run}`)).status, 200)
              // Tenant A has no such run and no such case; tenant B has both.
              assert.deepStrictEqual((yield* s.get("rita", `/runs/${run}`)).status, 404)
              assert.isTrue(Option.isNone(yield* caseOf(s, invoice)))
              assert.isTrue(Option.isSome(yield* caseOf(s, invoice, s.otherTenant)))
              const head = yield* s.inTenant(
                Effect.flatMap(JournalStore, (j) => j.head(run)),
                s.tenant,
              )
              assert.strictEqual(head.seq, 0)
            }),
          ),
      )

      it.effect("a caller without api:run.start is 403 naming the action, and nothing is started", () =>
        serving((s) =>
          Effect.gen(function* () {
            const invoice = `INV-${Math.random()}`
            const refused = yield* s.post("pat", "/runs", startBody(invoice))
            assert.deepStrictEqual(
              [refused.status, tagOf(refused), (refused.json as { readonly action?: string }).action],
              [403, "Forbidden", "api:run.start"],
            )
            assert.isTrue(Option.isNone(yield* caseOf(s, invoice)))
          }),
        ),
      )

      it.effect(
        "a retry under the same admission key answers the same run, admitted false; another input is 409 AdmissionConflict",
        () =>
          serving((s) =>
            Effect.gen(function* () {
              const invoice = `INV-${Math.random()}`
              const admissionKey = `order-${Math.random()}`
              const first = yield* s.post("rita", "/runs", startBody(invoice, { admissionKey }))
              assert.strictEqual(first.status, 201)
              const answer = first.json as { readonly run: RunId; readonly admitted: boolean }
              assert.isTrue(answer.admitted)
              const head = yield* s.inTenant(Effect.flatMap(JournalStore, (j) => j.head(answer.run)))
              const again = yield* s.post("rita", "/runs", startBody(invoice, { admissionKey }))
              assert.strictEqual(again.status, 201)
              assert.deepStrictEqual(
                [(again.json as typeof answer).run, (again.json as typeof answer).admitted],
                [answer.run, false],
              )
              // The retry did not touch the run: its journal is where the first start left it.
              assert.deepStrictEqual(yield* s.inTenant(Effect.flatMap(JournalStore, (j) => j.head(answer.run))), head)
              // One run in the case: no second admission.
              const id = Option.getOrThrow(yield* caseOf(s, invoice))
              const kase = yield* s.inTenant(Effect.flatMap(CaseStore, (c) => c.case(id)))
              assert.deepStrictEqual(
                Option.map(kase, (c) => c.runs),
                Option.some([answer.run]),
              )
              // The key with another input is no retry: 409 naming the first run, and nothing admitted.
              const conflict = yield* s.post("rita", "/runs", startBody(`${invoice}-other`, { admissionKey }))
              assert.deepStrictEqual(
                [conflict.status, tagOf(conflict), (conflict.json as { readonly run?: string }).run],
                [409, "AdmissionConflict", answer.run],
              )
              assert.isTrue(messageOf(conflict).includes("another input"), messageOf(conflict))
              // No run was admitted: a case the refused start opened on its way holds none.
              const opened = yield* caseOf(s, `${invoice}-other`)
              const runs = Option.isNone(opened)
                ? []
                : Option.getOrThrow(yield* s.inTenant(Effect.flatMap(CaseStore, (c) => c.case(opened.value)))).runs
              assert.deepStrictEqual(runs, [])
              // The same key from tenant B is another tenant's key: a run of its own.
              const other = yield* s.post("bob", "/runs", startBody(invoice, { admissionKey }))
              assert.strictEqual(other.status, 201)
              assert.notStrictEqual((other.json as typeof answer).run, answer.run)
              assert.isTrue((other.json as typeof answer).admitted)
            }),
          ),
      )
    })
  })
}
