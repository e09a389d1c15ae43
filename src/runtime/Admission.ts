/**
 * What an admission settles besides the run itself (§7.4): the case a new run is bound to, and
 * whether a key found taken was taken by the same admission (a retry) or by a different one.
 */
import { Effect, Option } from "effect"
import * as Canonical from "../domain/Canonical.js"
import * as CaseM from "../domain/Case.js"
import { type CorrelationKey, checkCount } from "../domain/CorrelationKey.js"
import type { CaseId, RunId } from "../domain/Ids.js"
import type * as Journal from "../domain/Journal.js"
import type { Json } from "../domain/Json.js"
import { AdmissionConflict, PlanContract } from "../errors/RuntimeError.js"
import type { DuplicateAdmission } from "../errors/StoreError.js"
import type { CaseStore } from "../services/CaseStore.js"
import type { JournalStore } from "../services/JournalStore.js"

/** The case a new run is admitted into: none, the case its correlation keys find or open, or a named one. */
export type Binding =
  | { readonly _tag: "None" }
  | { readonly _tag: "Keys"; readonly kind: string; readonly keys: ReadonlyArray<CorrelationKey> }
  | { readonly _tag: "Case"; readonly case: CaseId }

/** The case `binding` names, found or opened, with the run attached and the `CaseBound` record that says so. */
export const bind = (cases: CaseStore["Type"], binding: Binding, run: RunId, now: number) =>
  Effect.gen(function* () {
    switch (binding._tag) {
      case "None":
        return Option.none()
      case "Keys": {
        if (binding.keys.length === 0) {
          return yield* new PlanContract({ detail: "runCorrelated needs at least one correlation key" })
        }
        const tooMany = checkCount(binding.keys)
        if (tooMany !== undefined) return yield* new PlanContract({ detail: `runCorrelated: ${tooMany}` })
        const c = yield* cases.correlateOrOpen(binding.kind, binding.keys, now as never)
        yield* Effect.catchTag(cases.attachRun(c.case, run), "NotFound", (e) =>
          Effect.fail(new PlanContract({ detail: e.message })),
        )
        return Option.some({
          case: c.case,
          record: {
            kind: "CaseBound",
            case_kind: binding.kind,
            opened: CaseM.isNew(c),
            correlation: binding.keys.map((k) => ({ namespace: k.namespace, value: k.value })),
          } satisfies Journal.Kind,
        })
      }
      case "Case": {
        const found = yield* cases.case(binding.case)
        if (Option.isNone(found)) return yield* new PlanContract({ detail: `case ${binding.case} does not exist` })
        if (found.value.status === "closed") {
          return yield* new PlanContract({
            detail: `case ${binding.case} is closed: a closed case refuses new runs`,
          })
        }
        yield* Effect.catchTag(cases.attachRun(binding.case, run), "NotFound", (e) =>
          Effect.fail(new PlanContract({ detail: e.message })),
        )
        return Option.some({
          case: binding.case,
          record: {
            kind: "CaseBound",
            case_kind: found.value.kind,
            opened: false,
            correlation: found.value.correlation.map((k) => ({ namespace: k.namespace, value: k.value })),
          } satisfies Journal.Kind,
        })
      }
    }
  })

/**
 * A key already taken answers the first run (`DuplicateAdmission`) only when this admission
 * is a true retry of it: the same capability and the same canonical input. Otherwise the
 * caller made a mistake that answering the first run would hide: `AdmissionConflict`. A first
 * run whose admission can no longer be read (erased) cannot be compared and is answered as a
 * duplicate: the key stands for it either way.
 */
export const sameAdmission = (
  journal: JournalStore["Type"],
  duplicate: DuplicateAdmission,
  capability: string,
  input: Json,
) =>
  Effect.gen(function* () {
    const [first] = yield* Effect.orElseSucceed(journal.read(duplicate.run as RunId, 1), () => [])
    if (first?.kind.kind !== "RunAdmitted") return yield* duplicate
    const detail =
      first.kind.capability !== capability
        ? `capability ${first.kind.capability}, not ${capability}`
        : Canonical.text(first.kind.input) !== Canonical.text(input)
          ? "another input"
          : undefined
    if (detail === undefined) return yield* duplicate
    return yield* new AdmissionConflict({ key: duplicate.key, run: duplicate.run, detail })
  })
