/**
 * G1: one tenant per call. Business keys are per tenant, and no verb reaches a neighbour's row.
 */
import { describe } from "@effect/vitest"
import { Effect, Either, FastCheck, Option } from "effect"
import type { CaseId } from "../../../src/domain/Ids.js"
import { CaseVersion, generateRunId } from "../../../src/domain/Ids.js"
import { Tenant } from "../../../src/domain/Tenant.js"
import { NotFound } from "../../../src/errors/StoreError.js"
import { CaseStore } from "../../../src/services/CaseStore.js"
import { assert } from "../../support/Assert.js"
import { freshTenant, type Tester } from "../../support/Backend.js"
import { assertError } from "../../support/Errors.js"
import { at, deadline, digest, key, open } from "./Fixtures.js"

const Op = FastCheck.record({
  tenant: FastCheck.integer({ min: 0, max: 1 }),
  op: FastCheck.constantFrom(
    "open",
    "correlate",
    "case",
    "cases",
    "byStatus",
    "due",
    "breached",
    "putState",
    "attachRun",
    "linkBlob",
    "deadline",
    "blobsOf",
    "close",
  ),
  key: FastCheck.integer({ min: 0, max: 2 }),
  pick: FastCheck.nat(),
})

export const tenancy = (test: Tester) => {
  describe("tenancy", () => {
    test("two tenants with one business key get two cases", () =>
      Effect.gen(function* () {
        const k = key("doc", "shared")
        const [a, b] = [freshTenant(), freshTenant()]
        const inA = yield* open([k]).pipe(Effect.provideService(Tenant, a))
        const inB = yield* open([k]).pipe(Effect.provideService(Tenant, b))
        assert.notStrictEqual(inA, inB)
        const store = yield* CaseStore
        assert.deepStrictEqual(yield* store.correlate([k]).pipe(Effect.provideService(Tenant, a)), Option.some(inA))
        assert.deepStrictEqual(yield* store.case(inA).pipe(Effect.provideService(Tenant, b)), Option.none())
      }))

    test.prop(
      "random operations in two tenants never return or touch a row of the other",
      { ops: FastCheck.array(Op, { minLength: 1, maxLength: 30 }) },
      ({ ops }) =>
        Effect.gen(function* () {
          const store = yield* CaseStore
          const tenants = [freshTenant(), freshTenant()] as const
          const owned: [Array<CaseId>, Array<CaseId>] = [[], []]
          const mine = (t: number, id: CaseId) => assert.include(owned[t] ?? [], id, `tenant ${t} saw ${id}`)
          const seen = (t: number, ids: ReadonlyArray<CaseId>) => {
            for (const id of ids) mine(t, id)
          }
          for (const { tenant: t, op, key: k, pick } of ops) {
            const self = owned[t] ?? []
            const other = owned[1 - t] ?? []
            const target =
              other.length > 0 && pick % 2 === 0 ? other[pick % other.length] : self[pick % Math.max(1, self.length)]
            const foreign = target !== undefined && other.includes(target)
            const bizKey = key("doc", String(k))
            const step = Effect.gen(function* () {
              switch (op) {
                case "open": {
                  const r = yield* store.correlateOrOpen("claim", [bizKey], at(100 + pick))
                  if (r._tag === "Opened") self.push(r.case)
                  else mine(t, r.case)
                  return
                }
                case "correlate":
                  return Option.map(yield* store.correlate([bizKey]), (id) => mine(t, id))
                case "case":
                  if (target === undefined) return
                  return assert.strictEqual(Option.isSome(yield* store.case(target)), !foreign)
                case "cases":
                  return seen(
                    t,
                    (yield* store.cases(Option.none(), 50)).map((c) => c.id),
                  )
                case "byStatus":
                  return seen(
                    t,
                    (yield* store.byStatus("open", 50)).map((c) => c.id),
                  )
                case "due":
                  return seen(
                    t,
                    (yield* store.due(at(10_000), 50)).map((d) => d.case),
                  )
                case "breached":
                  return seen(
                    t,
                    (yield* store.breached(50)).map((d) => d.case),
                  )
                case "blobsOf":
                  if (target === undefined || !foreign) return
                  return assert.deepStrictEqual(yield* store.blobsOf(target), [])
                default: {
                  if (target === undefined) return
                  const write =
                    op === "putState"
                      ? Effect.asVoid(
                          Effect.catchTag(
                            store.putState(target, CaseVersion.make(0), pick),
                            "CaseConflict",
                            () => Effect.void,
                          ),
                        )
                      : op === "attachRun"
                        ? store.attachRun(target, generateRunId())
                        : op === "linkBlob"
                          ? store.linkBlob(target, digest(String(pick)), at(pick))
                          : op === "deadline"
                            ? store.registerDeadline(
                                deadline(target, `d${pick % 3}`, pick, pick % 2 === 0 ? "breached" : "pending"),
                              )
                            : Effect.catchTag(store.close(target), "ObligationsOutstanding", () => Effect.void)
                  const result = yield* Effect.either(write)
                  if (!foreign) return assert.strictEqual(result._tag, "Right")
                  assertError(
                    Either.getOrThrowWith(Either.flip(result), () => "expected a failure"),
                    new NotFound({ what: target }),
                  )
                }
              }
            })
            yield* step.pipe(Effect.provideService(Tenant, tenants[t] ?? tenants[0]))
          }
        }),
      {
        fastCheck: {
          numRuns: Number(process.env.AGENTPLANE_PROP_RUNS ?? 15),
          // Shrinking replays sequences against the database; past this it reports what it has.
          interruptAfterTimeLimit: 40_000,
          markInterruptAsFailure: true,
        },
      },
    )
  })
}
