/**
 * Admission in the order of §7.4: the definition registered, the input labelled and encoded,
 * policy configured, the quota (fail-closed), the lease, the case, then the run's opening records
 * staged for its first commit and the run driven.
 */
import { Effect, Option, Schema } from "effect"
import * as Canonical from "../../domain/Canonical.js"
import { Epoch, generateRunId, StepId } from "../../domain/Ids.js"
import * as Journal from "../../domain/Journal.js"
import { type Json, Json as JsonSchema } from "../../domain/Json.js"
import * as Quota from "../../domain/Quota.js"
import type * as Run from "../../domain/Run.js"
import { Tenant } from "../../domain/Tenant.js"
import { PolicyMissing } from "../../errors/PolicyError.js"
import { Halted, QuotaUnavailable } from "../../errors/QuotaError.js"
import { PlanContract } from "../../errors/RuntimeError.js"
import * as PolicyEngineM from "../../services/PolicyEngine.js"
import * as Admission from "../Admission.js"
import * as Execution from "../Execution.js"
import * as History from "../History.js"
import { type Any as AnyDefinition, frozen, type RunDefinition, shapeDigest } from "../RunDefinition.js"
import * as Writer from "../Writer.js"
import { drive, result } from "./Drive.js"
import { type EngineState, nowSecs, policyOf } from "./EngineState.js"
import { registered } from "./Load.js"

export const admit = <I, O, R>(
  state: EngineState,
  def: RunDefinition<I, O, R>,
  input: Run.Labeled<I>,
  binding: Admission.Binding,
  admissionKey: Option.Option<string>,
) =>
  Effect.gen(function* () {
    const { journal, quotas } = state
    const entry = yield* registered(state, def)
    if (
      input === null ||
      typeof input !== "object" ||
      !("label" in input) ||
      typeof input.label !== "string" ||
      input.label.length === 0
    ) {
      return yield* new PlanContract({
        detail: `input of ${def.capability} carries no trust label: pass Run.labeled(value, label)`,
      })
    }
    if (state.deniesAll) return yield* new PolicyMissing({ detail: PolicyEngineM.NO_POLICY_REASON })
    const inputJson = yield* encodeInput(def, input.value)
    const tenant = yield* Tenant
    const now = yield* nowSecs
    const run = generateRunId()
    const quota = state.quotaOf(tenant)
    // 1. Quota, fail-closed: any store failure refuses the admission. The halt is checked in the
    // run's opening commit (`Writer` `open`), before anything of it is durable or acts.
    const unavailable = (e: { readonly message: string }) => new QuotaUnavailable({ detail: e.message })
    // A bounded quota reserves a slot and a binding writes the case before that commit, so both
    // read the halt first: a halted tenant gets nothing written.
    if (!Quota.isUnlimited(quota) || binding._tag !== "None") {
      const halt = yield* Effect.mapError(quotas.halted(), unavailable)
      if (Option.isSome(halt)) return yield* new Halted({ tenant, reason: halt.value })
    }
    if (!Quota.isUnlimited(quota)) {
      if (Quota.boundsSpend(quota)) {
        const period = Quota.periodKey(quota.period, now as never)
        const spent = yield* Effect.mapError(quotas.spent(period), unavailable)
        yield* Quota.checkSpend(tenant, period, quota, spent)
      }
      yield* quotas.reserve(run, quota.maxConcurrentRuns, now as never).pipe(
        Effect.catchTags({
          Backend: (e) => Effect.fail(unavailable(e)),
          Corrupt: (e) => Effect.fail(unavailable(e)),
        }),
      )
    }
    const releaseQuota = Effect.ignore(quotas.release(run))
    // 2. The new run's lease: epoch 1, taken by its opening commit with the first records.
    const epoch = Epoch.make(1)
    // 3. The case.
    const bound = yield* Admission.bind(state.cases, binding, run, now).pipe(Effect.tapError(() => releaseQuota))
    const kase = Option.map(bound, (b) => b.case)
    const records: Array<Journal.Kind> = [
      {
        kind: "RunAdmitted",
        capability: def.capability,
        definition_version: def.version,
        ...definitionDigest(def),
        input: inputJson,
        input_label: input.label,
        policy_bundle: state.bundle,
        canon: Canonical.CANON_VERSION,
        ...(Option.isSome(admissionKey) ? { idempotency_key: admissionKey.value } : {}),
      },
      {
        kind: "PlanFrozen",
        steps: def.steps.length,
        plan: { ...(frozen(def) as object), admitted_at: now } as Json,
      },
    ]
    if (Option.isSome(bound)) records.push(bound.value.record)
    const history = History.build([])
    const writer = yield* Writer.make({
      mode: "live",
      run,
      epoch: Option.some(epoch),
      history,
      journal,
      tenant,
      open: { owner: state.owner, ttlSecs: state.ttl },
    })
    for (const kind of records) {
      writer.stage(
        Journal.built({ case: kase, step: StepId.make(0), phase: "forward", effectKey: Option.none(), kind }),
      )
    }
    // The admission (its key, if any, and the case binding) rides with the run's first commit,
    // which comes before its first act of any kind (the first announcement's, §7.11): a run is
    // durable, visible and recoverable before it does anything, and a keyed duplicate learns it
    // is one before any act (a model call costs money), from that same commit, which then writes
    // nothing. If the commit fails, nothing of the run is durable and `drive` detaches its case
    // and frees its lease and quota slot.
    const exec = Execution.make({
      run,
      mode: "live",
      history,
      writer,
      entry,
      input: input.value,
      case: kase,
      admittedAt: now,
      budget: def.budget,
      crash: state.crash,
      fake: state.fake,
      policy: policyOf(state, def.capability, tenant, input.label),
    })
    const status = yield* drive(state, exec, Option.some(epoch), quota, undefined, true).pipe(
      Effect.catchTag("DuplicateAdmission", (duplicate) =>
        Admission.sameAdmission(journal, duplicate, def.capability, inputJson),
      ),
    )
    return result<O>(exec, status)
  })

/** The admission key of a `…Once` call: the given one, else the definition's; neither is a plan-contract error. */
export const onceKey = <I, O, R>(def: RunDefinition<I, O, R>, input: Run.Labeled<I>, key: string | undefined) =>
  Option.match(key !== undefined ? Option.some(key) : Option.map(def.admissionKey, (f) => f(input.value)), {
    onNone: () =>
      Effect.fail(
        new PlanContract({
          detail: `${def.capability}: a …Once admission needs a key, given or from admissionKey`,
        }),
      ),
    onSome: (k) => Effect.succeed(Option.some(k)),
  })

const encodeInput = (def: AnyDefinition, value: unknown) =>
  Effect.flatMap(Schema.encode(def.input)(value), Schema.decodeUnknown(JsonSchema)).pipe(
    Effect.mapError(
      (e) => new PlanContract({ detail: `input of ${def.capability} does not match its schema: ${e.message}` }),
    ),
  )

/** The `definition_digest` field of the admission, where the definition's shape digest can be computed. */
const definitionDigest = (def: AnyDefinition): { readonly definition_digest?: string } => {
  const digest = shapeDigest(def)
  return digest === undefined ? {} : { definition_digest: digest }
}
