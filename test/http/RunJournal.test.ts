/**
 * `GET /runs/{run}/journal` on each backend: the run's records in order with their payloads,
 * paged by `from` and `limit`; another tenant's run and an unknown one are 404; a caller whose
 * roles the policy does not give `api:run.journal` is 403.
 */
import { describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { generateRunId } from "../../src/domain/Ids.js"
import { assert } from "../support/Assert.js"
import * as Http from "../support/Http.js"
import * as Definitions from "./Definitions.js"

// biome-ignore lint/suspicious/noExplicitAny: the answer is plain JSON, read by path.
type Page = { items: Array<any>; truncated: boolean }

for (const backend of Http.backends()) {
  describe(`http run journal (${backend.name})`, () => {
    layer(backend.layer, { excludeTestServices: true })((it) => {
      it.effect("lists the run's records in order with their payloads, paged by from and limit", () =>
        Http.withServer(
          (f) =>
            Effect.gen(function* () {
              const started = yield* f.inTenant(
                Definitions.start(f.runtime, Definitions.awaitsPayment, `INV-${Math.random()}`),
              )
              const whole = yield* f.raw("GET", `/runs/${started.run}/journal`, { as: "rita" })
              assert.strictEqual(whole.status, 200)
              const page = whole.json as Page
              assert.deepStrictEqual(
                page.items.map((e) => e.seq),
                page.items.map((_, i) => i + 1),
              )
              assert.strictEqual(page.items[0].record.kind, "RunAdmitted")
              assert.strictEqual(page.items[0].record.capability, "http-test.await")
              const last = page.items.at(-1)
              assert.deepStrictEqual([last.record.kind, last.record.reason.kind], ["RunSuspended", "invoice.paid"])
              assert.strictEqual(page.truncated, false)
              const cut = (yield* f.raw("GET", `/runs/${started.run}/journal?from=2&limit=2`, { as: "rita" }))
                .json as Page
              assert.deepStrictEqual([cut.items.map((e) => e.seq), cut.truncated], [[2, 3], page.items.length > 3])
            }),
          { definitions: [Definitions.awaitsPayment] },
        ),
      )

      it.effect("another tenant's run and an unknown run are 404; a caller without the action is 403", () =>
        Http.withServer(
          (f) =>
            Effect.gen(function* () {
              const started = yield* f.inTenant(
                Definitions.start(f.runtime, Definitions.awaitsPayment, `INV-${Math.random()}`),
              )
              const other = yield* f.raw("GET", `/runs/${started.run}/journal`, { as: "bob" })
              assert.deepStrictEqual([other.status, (other.json as { _tag: string })._tag], [404, "NotFound"])
              const unknown = yield* f.raw("GET", `/runs/${generateRunId()}/journal`, { as: "rita" })
              assert.strictEqual(unknown.status, 404)
              const refused = yield* f.raw("GET", `/runs/${started.run}/journal`, { as: "pat" })
              assert.deepStrictEqual(
                [refused.status, (refused.json as { action: string }).action],
                [403, "api:run.journal"],
              )
            }),
          { definitions: [Definitions.awaitsPayment] },
        ),
      )
    })
  })
}
