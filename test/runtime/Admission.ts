/**
 * §7.4 admission, in order: a labelled input, the quota first and fail-closed, the lease, the
 * case binding with `CaseBound`, one append; a failed append detaches and releases; every exit
 * releases the quota slot and accrues spend; the `…Once` variants.
 */
import { SqlClient } from "@effect/sql"
import { describe, it } from "@effect/vitest"
import { Effect, Option, Schema } from "effect"
import { expect } from "vitest"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import type { RunId } from "../../src/domain/Ids.js"
import * as Quota from "../../src/domain/Quota.js"
import * as Run from "../../src/domain/Run.js"
import { Tenant } from "../../src/domain/Tenant.js"
import * as EffectKind from "../../src/runtime/EffectKind.js"
import * as RunDefinition from "../../src/runtime/RunDefinition.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import * as Step from "../../src/runtime/Step.js"
import { StepCtx } from "../../src/runtime/StepCtx.js"
import { CaseStore } from "../../src/services/CaseStore.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import { QuotaStore } from "../../src/services/QuotaStore.js"
import * as Backend from "../support/Backend.js"
import * as Support from "./Support.js"

const Input = Schema.Struct({ n: Schema.Number })

const quota = (fields: Partial<ConstructorParameters<typeof Quota.TenantQuota>[0]>) => () =>
  new Quota.TenantQuota({
    maxConcurrentRuns: Option.none(),
    maxTokensPerPeriod: Option.none(),
    maxMinorUnitsPerPeriod: Option.none(),
    period: "monthly",
    ...fields,
  })

const period = () => Quota.periodKey("monthly", Math.floor(Date.now() / 1000) as never)

/** A kind that notes how many runs hold a quota slot while it acts, and spends 7 tokens. */
const sampling = (samples: Array<number>) =>
  Support.acting<QuotaStore | Tenant>(
    "admission.sample",
    { mutates: false, spend: () => new Quota.Spend({ tokens: 7, minorUnits: 0 }) },
    (n) =>
      Effect.gen(function* () {
        samples.push(yield* Effect.orDie(Effect.flatMap(QuotaStore, (q) => q.running())))
        return { ok: "sampled", n }
      }),
  )

const oneStep = (capability: string, body: Effect.Effect<number, unknown, StepCtx | QuotaStore | Tenant>) =>
  RunDefinition.make({
    capability,
    input: Input,
    output: Schema.Number,
    plan: [Step.make({ name: "only", body: () => body })],
    admissionKey: (input: { readonly n: number }) => `order-${input.n}`,
  })

const key = (value: string) => CorrelationKey.make("order", value)

/** Nothing of an admission was written: no run in the journal's activity, no quota slot, no act. */
const expectNothingWritten = Effect.gen(function* () {
  expect(yield* Effect.flatMap(JournalStore, (j) => j.recentRuns(Option.none(), 10))).toEqual([])
  expect(yield* Effect.flatMap(QuotaStore, (q) => q.running())).toBe(0)
})

export const suite = (backend: Backend.Backend) =>
  describe("admission", () => {
    const counter = new Support.Counter()
    const plain = oneStep(
      "admission.plain",
      Effect.flatMap(StepCtx, (cx) =>
        cx.perform(Support.counting(counter, "admission.act", { mutates: true }), { n: 1 }),
      ).pipe(Effect.map((a) => a.n)),
    )

    describe("input", () => {
      it.live("a bare input, without a trust label, is refused with PlanContract and writes nothing", () =>
        Effect.gen(function* () {
          const rt = yield* Runtime.Runtime
          const bare = yield* Effect.flip(rt.run(plain, { n: 1 } as unknown as Run.Labeled<{ readonly n: number }>))
          expect(bare._tag).toBe("PlanContract")
          const empty = yield* Effect.flip(rt.run(plain, Run.labeled({ n: 1 }, "")))
          expect(empty._tag).toBe("PlanContract")
          yield* expectNothingWritten
        }).pipe(Support.on(Support.runtime(backend, [plain])), Backend.asFreshTenant),
      )

      it.live("a definition this runtime did not register is refused with PlanContract", () => {
        const stranger = oneStep("admission.stranger", Effect.succeed(1))
        return Effect.gen(function* () {
          const error = yield* Effect.flip(
            Effect.flatMap(Runtime.Runtime, (rt) => rt.run(stranger, Run.labeled({ n: 1 }, "test"))),
          )
          expect(error._tag).toBe("PlanContract")
          yield* expectNothingWritten
        }).pipe(Support.on(Support.runtime(backend, [plain])), Backend.asFreshTenant)
      })

      it.live(
        "runCorrelated with more keys than a case call may carry is refused with PlanContract before any case opens",
        () =>
          Effect.gen(function* () {
            const rt = yield* Runtime.Runtime
            const keys = Array.from({ length: 257 }, (_, i) => key(`k-${i}`))
            const error = yield* Effect.flip(rt.runCorrelated(plain, Run.labeled({ n: 1 }, "test"), "order", keys))
            expect(error._tag).toBe("PlanContract")
            expect(error.message).toContain("257 correlation keys")
            expect(yield* Effect.flatMap(CaseStore, (c) => c.correlate(keys.slice(0, 1)))).toEqual(Option.none())
            expect(yield* Effect.flatMap(JournalStore, (j) => j.recentRuns(Option.none(), 10))).toEqual([])
          }).pipe(Support.on(Support.runtime(backend, [plain])), Backend.asFreshTenant),
      )

      it.live("the idempotency key an act is given is the same on every attempt and differs between runs", () => {
        const seen: Array<{ readonly attempt: number; readonly key: string }> = []
        let calls = 0
        const flaky = EffectKind.make({
          kind: "admission.idempotent",
          args: Input,
          success: Schema.Number,
          mutates: true,
          recovery: Run.Recovery.Idempotent({ key: Option.none() }),
          retry: new Run.RetryPolicy({ maxAttempts: 2, backoffMs: 0 }),
          act: (_args, attempt) =>
            Effect.suspend(() => {
              seen.push({ attempt: attempt.attempt, key: attempt.idempotencyKey })
              calls += 1
              return calls % 2 === 1
                ? Effect.fail(new EffectKind.Transient({ message: "timeout", disposition: "in_doubt" }))
                : Effect.succeed(1)
            }),
        })
        const def = oneStep(
          "admission.idempotent",
          Effect.flatMap(StepCtx, (cx) => cx.perform(flaky, { n: 1 })),
        )
        return Effect.gen(function* () {
          const rt = yield* Runtime.Runtime
          yield* rt.run(def, Run.labeled({ n: 1 }, "test"))
          yield* rt.run(def, Run.labeled({ n: 1 }, "test"))
          expect(seen.map((s) => s.attempt)).toEqual([1, 2, 1, 2])
          expect(seen[0]?.key).toBe(seen[1]?.key)
          expect(seen[2]?.key).toBe(seen[3]?.key)
          expect(seen[0]?.key).not.toBe(seen[2]?.key)
        }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
      })
    })

    describe("quota first, fail-closed", () => {
      // Damage only a database can hold: a spend past the safe-integer range, which the store
      // reads as Corrupt. The runtime must refuse, not admit on a quota it could not read.
      if (Option.isSome(backend.sql)) {
        const access = backend.sql.value
        it.live(
          "a spend the quota store cannot read refuses the admission with QuotaUnavailable, and nothing runs",
          () => {
            const acts = new Support.Counter()
            const bounded = oneStep(
              "admission.fail-closed",
              Effect.flatMap(StepCtx, (cx) =>
                cx.perform(Support.counting(acts, "admission.fail-closed.act", { mutates: true }), { n: 1 }),
              ).pipe(Effect.map((a) => a.n)),
            )
            return Effect.gen(function* () {
              const sql = yield* SqlClient.SqlClient
              const tenant = yield* Tenant
              yield* sql`INSERT INTO quota_spent (tenant, period, tokens, minor_units)
                       VALUES (${tenant}, ${period()}, ${"4611686018427387904"}, 0)`
              const error = yield* Effect.flip(
                Effect.flatMap(Runtime.Runtime, (rt) => rt.run(bounded, Run.labeled({ n: 1 }, "test"))).pipe(
                  Support.on(
                    Support.runtime(backend, [bounded], { quota: quota({ maxTokensPerPeriod: Option.some(100) }) }),
                  ),
                ),
              )
              expect(error._tag).toBe("QuotaUnavailable")
              expect(acts.get("admission.fail-closed.act")).toBe(0)
              expect(yield* Effect.flatMap(JournalStore, (j) => j.recentRuns(Option.none(), 10))).toEqual([])
            }).pipe(Effect.provide(access.layer), Backend.asFreshTenant)
          },
        )
      }

      it.live("a halted tenant is refused with Halted before anything else, even with an unlimited quota", () =>
        Effect.gen(function* () {
          const rt = yield* Runtime.Runtime
          const cases = yield* CaseStore
          yield* Effect.flatMap(QuotaStore, (q) => q.setHalt(Option.some("incident 42")))
          const before = counter.get("admission.act")
          const error = yield* Effect.flip(rt.runCorrelated(plain, Run.labeled({ n: 1 }, "test"), "order", [key("h")]))
          expect(error).toMatchObject({ _tag: "Halted", reason: "incident 42" })
          expect(counter.get("admission.act")).toBe(before)
          expect(yield* cases.correlate([key("h")])).toEqual(Option.none())
          yield* expectNothingWritten
        }).pipe(Support.on(Support.runtime(backend, [plain])), Backend.asFreshTenant),
      )

      it.live(
        "a halted tenant's unbound run under an unlimited quota is refused by its opening commit: nothing acts, nothing is written",
        () =>
          Effect.gen(function* () {
            yield* Effect.flatMap(QuotaStore, (q) => q.setHalt(Option.some("incident 43")))
            const before = counter.get("admission.act")
            const error = yield* Effect.flip(
              Effect.flatMap(Runtime.Runtime, (rt) =>
                rt.run(plain, Run.labeled({ n: 1 }, "test"), { admissionKey: "halted-key" }),
              ),
            )
            expect(error).toMatchObject({ _tag: "Halted", reason: "incident 43" })
            expect(counter.get("admission.act")).toBe(before)
            expect(yield* Effect.flatMap(JournalStore, (j) => j.admittedAs("halted-key"))).toEqual(Option.none())
            yield* expectNothingWritten
          }).pipe(Support.on(Support.runtime(backend, [plain])), Backend.asFreshTenant),
      )

      it.live("a halted tenant is refused with Halted under a bounded quota too", () =>
        Effect.gen(function* () {
          yield* Effect.flatMap(QuotaStore, (q) => q.setHalt(Option.some("stop")))
          const error = yield* Effect.flip(
            Effect.flatMap(Runtime.Runtime, (rt) => rt.run(plain, Run.labeled({ n: 1 }, "test"))),
          )
          expect(error._tag).toBe("Halted")
          yield* expectNothingWritten
        }).pipe(
          Support.on(Support.runtime(backend, [plain], { quota: quota({ maxConcurrentRuns: Option.some(5) }) })),
          Backend.asFreshTenant,
        ),
      )

      it.live("a tenant that has spent its period's tokens is refused with SpentOut", () =>
        Effect.gen(function* () {
          yield* Effect.flatMap(QuotaStore, (q) => q.accrue(period(), new Quota.Spend({ tokens: 100, minorUnits: 0 })))
          const error = yield* Effect.flip(
            Effect.flatMap(Runtime.Runtime, (rt) => rt.run(plain, Run.labeled({ n: 1 }, "test"))),
          )
          expect(error).toMatchObject({ _tag: "SpentOut", unit: "tokens", spent: 100, limit: 100 })
          yield* expectNothingWritten
        }).pipe(
          Support.on(Support.runtime(backend, [plain], { quota: quota({ maxTokensPerPeriod: Option.some(100) }) })),
          Backend.asFreshTenant,
        ),
      )

      it.live("a tenant at maxConcurrentRuns is refused with TooManyRuns naming the count", () =>
        Effect.gen(function* () {
          const other = "run_01M8RH0000000000000000OTHER" as RunId
          yield* Effect.flatMap(QuotaStore, (q) => q.reserve(other, Option.none(), 0 as never))
          const error = yield* Effect.flip(
            Effect.flatMap(Runtime.Runtime, (rt) => rt.run(plain, Run.labeled({ n: 1 }, "test"))),
          )
          expect(error).toMatchObject({ _tag: "TooManyRuns", running: 1 })
          expect(yield* Effect.flatMap(JournalStore, (j) => j.recentRuns(Option.none(), 10))).toEqual([])
          expect(yield* Effect.flatMap(QuotaStore, (q) => q.running())).toBe(1)
        }).pipe(
          Support.on(Support.runtime(backend, [plain], { quota: quota({ maxConcurrentRuns: Option.some(1) }) })),
          Backend.asFreshTenant,
        ),
      )
    })

    describe("lease", () => {
      it.live("the run holds its lease from its first commit while it runs and releases it on exit", () => {
        const held: Array<string> = []
        const def = oneStep(
          "admission.lease",
          Effect.gen(function* () {
            const cx = yield* StepCtx
            // The first act's announcement is the run's first commit, which takes the lease.
            yield* cx.now
            const intruder = yield* Effect.flip(
              Effect.flatMap(JournalStore, (j) => j.acquire(cx.run, "intruder", 1)),
            ).pipe(Effect.orDie)
            held.push(intruder._tag)
            return 1
          }) as Effect.Effect<number, never, StepCtx>,
        )
        return Effect.gen(function* () {
          const result = yield* Effect.flatMap(Runtime.Runtime, (rt) => rt.run(def, Run.labeled({ n: 1 }, "test")))
          expect(held).toEqual(["LeaseHeld"])
          const next = yield* Effect.flatMap(JournalStore, (j) => j.acquire(result.run, "next", 1))
          expect(next.epoch).toBe(2)
        }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
      })
    })

    describe("case binding", () => {
      it.live("runCorrelated opens a case, journals CaseBound{opened: true} and stamps every record", () =>
        Effect.gen(function* () {
          const rt = yield* Runtime.Runtime
          const cases = yield* CaseStore
          const first = yield* rt.runCorrelated(plain, Run.labeled({ n: 1 }, "test"), "order", [key("c1")])
          const second = yield* rt.runCorrelated(plain, Run.labeled({ n: 2 }, "test"), "order", [key("c1")])
          const kase = Option.getOrThrow(first.case)
          expect(second.case).toEqual(Option.some(kase))
          for (const [result, opened] of [
            [first, true],
            [second, false],
          ] as const) {
            const records = yield* Support.journalOf(result.run)
            expect(records.every((r) => Option.getOrUndefined(r.case) === kase)).toBe(true)
            expect(Support.recordsOfKind(records, "CaseBound").map((r) => r.kind)).toEqual([
              { kind: "CaseBound", case_kind: "order", opened, correlation: [{ namespace: "order", value: "c1" }] },
            ])
          }
          expect(Option.getOrThrow(yield* cases.case(kase)).runs).toEqual([first.run, second.run])
        }).pipe(Support.on(Support.runtime(backend, [plain])), Backend.asFreshTenant),
      )

      it.live("runInCase binds to an open case with CaseBound{opened: false} and stamps every record", () =>
        Effect.gen(function* () {
          const rt = yield* Runtime.Runtime
          const opened = yield* Effect.flatMap(CaseStore, (c) => c.correlateOrOpen("claim", [key("i1")], 0 as never))
          const result = yield* rt.runInCase(plain, Run.labeled({ n: 1 }, "test"), opened.case)
          expect(result.case).toEqual(Option.some(opened.case))
          const records = yield* Support.journalOf(result.run)
          expect(records.every((r) => Option.getOrUndefined(r.case) === opened.case)).toBe(true)
          expect(Support.recordsOfKind(records, "CaseBound").map((r) => r.kind)).toEqual([
            {
              kind: "CaseBound",
              case_kind: "claim",
              opened: false,
              correlation: [{ namespace: "order", value: "i1" }],
            },
          ])
        }).pipe(Support.on(Support.runtime(backend, [plain])), Backend.asFreshTenant),
      )

      it.live("runInCase of a missing case is a PlanContract error; of a closed case it is refused", () =>
        Effect.gen(function* () {
          const rt = yield* Runtime.Runtime
          const cases = yield* CaseStore
          const first = yield* rt.runCorrelated(plain, Run.labeled({ n: 1 }, "test"), "order", [key("x1")])
          const kase = Option.getOrThrow(first.case)
          const missing = yield* Effect.flip(
            rt.runInCase(plain, Run.labeled({ n: 1 }, "test"), "case_01M8RH000000000000000MISSING" as never),
          )
          expect(missing._tag).toBe("PlanContract")
          yield* cases.close(kase)
          const closed = yield* Effect.flip(rt.runInCase(plain, Run.labeled({ n: 2 }, "test"), kase))
          expect(closed).toMatchObject({ _tag: "PlanContract" })
          expect((closed as { readonly detail: string }).detail).toContain("closed")
          expect(Option.getOrThrow(yield* cases.case(kase)).runs).toEqual([first.run])
          expect(yield* Effect.flatMap(QuotaStore, (q) => q.running())).toBe(0)
        }).pipe(
          Support.on(Support.runtime(backend, [plain], { quota: quota({ maxConcurrentRuns: Option.some(3) }) })),
          Backend.asFreshTenant,
        ),
      )
    })

    describe("…Once", () => {
      it.live("a second admission with the key fails DuplicateAdmission naming the holder, and acts nothing", () => {
        const local = new Support.Counter()
        const def = oneStep(
          "admission.once",
          Effect.map(
            Effect.flatMap(StepCtx, (cx) =>
              cx.perform(Support.counting(local, "admission.once", { mutates: true }), { n: 1 }),
            ),
            (a) => a.n,
          ),
        )
        return Effect.gen(function* () {
          const rt = yield* Runtime.Runtime
          const first = yield* rt.runOnce(def, Run.labeled({ n: 7 }, "test"))
          const again = yield* Effect.flip(rt.runOnce(def, Run.labeled({ n: 7 }, "test"), "order-7"))
          expect(again).toMatchObject({ _tag: "DuplicateAdmission", key: "order-7", run: first.run })
          expect(local.get("admission.once")).toBe(1)
          expect(yield* Effect.flatMap(JournalStore, (j) => j.admittedAs("order-7"))).toEqual(Option.some(first.run))
        }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
      })

      it.live(
        "the key reused with another input or capability is AdmissionConflict naming the first run; the same input is DuplicateAdmission; nothing acts",
        () => {
          const local = new Support.Counter()
          const body = Effect.map(
            Effect.flatMap(StepCtx, (cx) =>
              cx.perform(Support.counting(local, "admission.conflict", { mutates: true }), { n: 1 }),
            ),
            (a) => a.n,
          )
          const def = oneStep("admission.conflict", body)
          const other = oneStep("admission.conflict.other", body)
          return Effect.gen(function* () {
            const rt = yield* Runtime.Runtime
            const first = yield* rt.runOnce(def, Run.labeled({ n: 7 }, "test"), "refund-7")
            // The same canonical input is a retry, whatever label it carries now: the first run answers.
            const same = yield* Effect.flip(rt.runOnce(def, Run.labeled({ n: 7 }, "operator"), "refund-7"))
            expect(same).toMatchObject({ _tag: "DuplicateAdmission", run: first.run })
            const input = yield* Effect.flip(rt.runOnce(def, Run.labeled({ n: 8 }, "test"), "refund-7"))
            expect(input).toMatchObject({ _tag: "AdmissionConflict", key: "refund-7", run: first.run })
            expect(input.message).toContain("another input")
            const capability = yield* Effect.flip(rt.runOnce(other, Run.labeled({ n: 7 }, "test"), "refund-7"))
            expect(capability).toMatchObject({ _tag: "AdmissionConflict", run: first.run })
            expect(capability.message).toContain("capability admission.conflict")
            expect(local.get("admission.conflict")).toBe(1)
            expect(yield* Effect.flatMap(JournalStore, (j) => j.admittedAs("refund-7"))).toEqual(Option.some(first.run))
          }).pipe(Support.on(Support.runtime(backend, [def, other])), Backend.asFreshTenant)
        },
      )

      it.live("a failed append detaches the run from its case and gives back its quota slot", () =>
        Effect.gen(function* () {
          const rt = yield* Runtime.Runtime
          const first = yield* rt.runCorrelatedOnce(plain, Run.labeled({ n: 1 }, "test"), "order", [key("d1")], "k-d1")
          const again = yield* Effect.flip(
            rt.runCorrelatedOnce(plain, Run.labeled({ n: 2 }, "test"), "order", [key("d1")], "k-d1"),
          )
          // Another input under the key: refused as a conflict, and cleaned up as any failed append.
          expect(again).toMatchObject({ _tag: "AdmissionConflict", key: "k-d1", run: first.run })
          const kase = Option.getOrThrow(first.case)
          expect(Option.getOrThrow(yield* Effect.flatMap(CaseStore, (c) => c.case(kase))).runs).toEqual([first.run])
          expect(yield* Effect.flatMap(QuotaStore, (q) => q.running())).toBe(0)
        }).pipe(
          Support.on(Support.runtime(backend, [plain], { quota: quota({ maxConcurrentRuns: Option.some(2) }) })),
          Backend.asFreshTenant,
        ),
      )
    })

    describe("every exit", () => {
      it.live(
        "succeeded, failed, exhausted and quarantined runs each give back the slot and accrue their spend",
        () => {
          const samples: Array<number> = []
          const sample = sampling(samples)
          const doubt = Support.acting("admission.doubt", { mutates: true }, () =>
            Effect.fail(new EffectKind.Transient({ message: "timed out", disposition: "in_doubt" })),
          )
          const then = (rest: Effect.Effect<number, unknown, StepCtx | QuotaStore | Tenant>) =>
            Effect.gen(function* () {
              const cx = yield* StepCtx
              yield* cx.perform(sample, { n: 1 })
              return yield* rest
            })
          const succeeded = oneStep("exit.succeeded", then(Effect.succeed(1)))
          const failed = oneStep("exit.failed", then(Effect.fail("no")))
          const exhausted = RunDefinition.make({
            capability: "exit.exhausted",
            input: Input,
            output: Schema.Number,
            plan: [
              Step.make({
                name: "only",
                body: () => then(Effect.flatMap(StepCtx, (cx) => cx.perform(sample, { n: 2 })).pipe(Effect.as(1))),
              }),
            ],
            budget: Run.budget({ maxEffects: 1 }),
          })
          const quarantined = oneStep(
            "exit.quarantined",
            then(Effect.flatMap(StepCtx, (cx) => cx.perform(doubt, { n: 3 })).pipe(Effect.as(1))),
          )
          const defs = [succeeded, failed, exhausted, quarantined] as const
          return Effect.gen(function* () {
            const rt = yield* Runtime.Runtime
            const quotas = yield* QuotaStore
            const statuses: Array<string> = []
            for (const [i, def] of defs.entries()) {
              const result = yield* rt.run(def, Run.labeled({ n: i }, "test"))
              statuses.push(result.status._tag)
              expect(yield* quotas.running()).toBe(0)
              expect((yield* quotas.spent(period())).tokens).toBe(7 * (i + 1))
            }
            expect(statuses).toEqual(["Succeeded", "Failed", "Exhausted", "Quarantined"])
            // Each run held its slot while it acted.
            expect(samples).toEqual([1, 1, 1, 1])
          }).pipe(
            Support.on(
              Support.runtime(backend, [...defs], {
                quota: quota({ maxConcurrentRuns: Option.some(2), maxTokensPerPeriod: Option.some(1_000_000) }),
              }),
            ),
            Backend.asFreshTenant,
          )
        },
      )
    })
  })
