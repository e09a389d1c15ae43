/**
 * The Cedar policy engine (§7.12), through the official `@cedar-policy/cedar-wasm` bindings, loaded
 * once per process by `policy/CedarBindings`.
 *
 * Loading: the schema must parse and every policy must validate against it (Cedar's strict
 * validation), or the bundle is refused with `BundleInvalid` listing each problem; a policy that
 * names an unknown action or attribute is a typo, and a typo in a forbid would silently allow.
 *
 * How a Cedar answer becomes a `Decision`:
 * - A satisfied `forbid` → `Deny`, its reason the `@reason("…")` annotations of the forbids that
 *   decided (else `forbidden by policy <id>`).
 * - No satisfied `permit` → `Deny` (`no policy permits <action>`): Cedar's default deny.
 * - Satisfied permits, and at least one carries `@approval("role1,role2")` → `RequireApproval`
 *   with the union of their roles (in bundle order) and their `@reason`s. One approval permit is
 *   enough even when a plain permit also matches: the approval was written for this narrower
 *   case, and a broader permit must not waive it.
 * - Otherwise → `Allow`.
 * - A policy that fails to evaluate (an attribute the request lacks, an overflow) fails closed:
 *   `Deny` naming it, unless a forbid already denies. Cedar itself skips an erroring policy, and
 *   a skipped forbid would allow.
 * `@approval` on a forbid, or with no role in it, refuses the bundle.
 *
 * A policy's id is its `@id("…")` annotation, else `<file>#<n>` (its position in the file from 0).
 *
 * Decisions are remembered under the parts of the request the policies read (`policy/Reads.ts`;
 * see `explain`). On a miss the request becomes Cedar entities (`Agentplane::Agent` with its
 * attributes and roles as parents, the `Case`/`Run`/`Api` resource) and a context: `mutates`,
 * `phase`, `label`, `provenances`, `argsJson` (the canonical arguments), and `args` when the
 * arguments are an object. JSON has values Cedar lacks, so `args` is converted: integers within
 * ±2^53 stay Longs, other numbers become their JSON text, `null` members are left out (so `has`
 * tests presence), and members whose name starts with `__` are left out, because Cedar's JSON
 * reads `__entity` and `__extn` as escapes and an argument must not be able to forge an entity.
 * Effect kinds are actions of the empty namespace, placed in `Agentplane::Action::"effect"`;
 * `api:*` actions and `agentplane.release` are `Agentplane::Action`s.
 */
import type * as Cedar from "@cedar-policy/cedar-wasm/nodejs"
import type { FileSystem } from "@effect/platform"
import { Effect, Either, Layer } from "effect"
import * as Canonical from "../domain/Canonical.js"
import { Decision } from "../domain/Decision.js"
import type { Json } from "../domain/Json.js"
import type { PolicyRequest } from "../domain/PolicyRequest.js"
import { BundleInvalid, type BundleUnreadable, type PolicyError, PolicyUnavailable } from "../errors/PolicyError.js"
import * as Bundle from "../policy/Bundle.js"
import * as CedarBindings from "../policy/CedarBindings.js"
import * as Reads from "../policy/Reads.js"
import { PolicyEngine } from "../services/PolicyEngine.js"

/** One policy of a loaded bundle, as `policy check` reports it. */
export interface PolicyInfo {
  readonly id: string
  readonly effect: "permit" | "forbid"
  readonly annotations: Readonly<Record<string, string>>
}

/** A bundle that parsed and validated, ready to evaluate. */
export interface Loaded {
  readonly bundle: Bundle.Bundle
  readonly policies: ReadonlyMap<string, PolicyInfo>
  /** Each policy's place in the bundle (file name, then position in the file), by id. */
  readonly order: ReadonlyMap<string, number>
  /** What the policies read of a request: the decision memo's key (`policy/Reads.ts`). */
  readonly reads: Reads.Reads
  /** Decisions already taken, by `Reads.key`, oldest first (see `explain`). */
  readonly memo: Map<string, Explained>
}

/** A decision with the policies that took it (the deciding forbids or permits, or the ones that failed). */
export interface Explained {
  readonly decision: Decision
  readonly policies: ReadonlyArray<PolicyInfo>
}

/** Parses and validates `bundle`; `BundleInvalid` lists every problem found. */
export const load = (bundle: Bundle.Bundle): Either.Either<Loaded, BundleInvalid> => {
  const refuse = (problems: ReadonlyArray<string>) =>
    Either.left(
      new BundleInvalid({ source: bundle.source, problems: [problems[0] ?? "refused", ...problems.slice(1)] }),
    )
  const schema = cedar().checkParseSchema(bundle.schema)
  if (schema.type === "failure") return refuse(schema.errors.map((e) => `schema: ${detail(e)}`))
  const problems: Array<string> = []
  const policies = new Map<string, PolicyInfo>()
  const texts: Record<string, string> = {}
  const jsons: Array<Cedar.PolicyJson> = []
  for (const file of bundle.policies) {
    const parts = cedar().policySetTextToParts(file.text)
    if (parts.type === "failure") {
      problems.push(...parts.errors.map((e) => `${file.name}: ${detail(e)}`))
      continue
    }
    if (parts.policy_templates.length > 0)
      problems.push(`${file.name}: templates are not supported; write static policies`)
    for (const [index, text] of parts.policies.entries()) {
      const json = cedar().policyToJson(text)
      if (json.type === "failure") {
        problems.push(...json.errors.map((e) => `${file.name}#${index}: ${detail(e)}`))
        continue
      }
      const annotations = json.json.annotations ?? {}
      const id = annotations.id ?? `${file.name}#${index}`
      if (policies.has(id)) problems.push(`policy id ${JSON.stringify(id)} is used twice`)
      const approval = annotations.approval
      if (approval !== undefined && json.json.effect === "forbid")
        problems.push(`policy ${id}: @approval on a forbid means nothing; approval is asked for by a permit`)
      if (approval !== undefined && rolesOf(approval).length === 0)
        problems.push(`policy ${id}: @approval names no role ("role1,role2")`)
      policies.set(id, { id, effect: json.json.effect, annotations })
      jsons.push(json.json)
      texts[id] = text
    }
  }
  if (problems.length > 0) return refuse(problems)
  const validated = cedar().validate({ schema: bundle.schema, policies: { staticPolicies: texts } })
  if (validated.type === "failure") return refuse(validated.errors.map(detail))
  if (validated.validationErrors.length > 0)
    return refuse(validated.validationErrors.map((e) => `policy ${e.policyId}: ${detail(e.error)}`))
  // Parsed once here and kept by the bindings under the digest, so a decision does not re-parse
  // the policy text: same digest, same text, so a second load of one bundle reuses the entry.
  const cached = cedar().preparsePolicySet(bundle.digest, { staticPolicies: texts })
  if (cached.type === "failure") return refuse(cached.errors.map(detail))
  return Either.right({
    bundle,
    policies,
    order: new Map([...policies.keys()].map((id, i) => [id, i])),
    reads: Reads.of(jsons),
    memo: new Map(),
  })
}

/**
 * The decision on `request` under `loaded`, with the policies that took it.
 *
 * Decisions are remembered under the parts of the request the bundle's policies read
 * (`Reads.key`), up to `MEMO_SIZE` of them, the oldest forgotten first. One call into
 * cedar-wasm with a preparsed policy set cost ~80 µs on this 2-core machine at load 1.4 (a
 * permit-all bundle, the bench's request): ~35 µs of it goes to the three entities crossing into
 * Cedar's form, ~25 µs to the context, ~18 µs to the bare call; evaluating one policy is
 * negligible. That is most of what deciding every effect adds to a short run; a remembered
 * decision costs a key of a few µs. A bundle whose policies read the arguments keys by them and
 * so mostly misses, paying the call as before. A failure is not remembered: the next request asks again.
 */
export const explain = (loaded: Loaded, request: PolicyRequest): Either.Either<Explained, PolicyError> => {
  const key = Reads.key(loaded.reads, request)
  // A key holds the arguments when the policies read them, and arguments can be large (a mail's
  // body): such a decision is not remembered, so the memo stays a few MB whatever the runs send.
  if (key.length > MEMO_KEY_CHARS) return evaluate(loaded, request)
  const known = loaded.memo.get(key)
  if (known !== undefined) return Either.right(known)
  const answer = evaluate(loaded, request)
  if (Either.isRight(answer)) {
    if (loaded.memo.size >= MEMO_SIZE) loaded.memo.delete(loaded.memo.keys().next().value as string)
    loaded.memo.set(key, answer.right)
  }
  return answer
}

/** How many decisions one bundle remembers. */
export const MEMO_SIZE = 4096

/** The longest key remembered: with `MEMO_SIZE`, at most ~8 MB of keys per bundle. */
export const MEMO_KEY_CHARS = 1024

/** The engine of a loaded bundle. */
export const engine = (loaded: Loaded): PolicyEngine["Type"] =>
  PolicyEngine.of({
    bundle: { digest: loaded.bundle.digest, source: loaded.bundle.source },
    decide: (request) => Effect.suspend(() => Either.map(explain(loaded, request), (explained) => explained.decision)),
  })

/** The engine of `bundle`, refused with `BundleInvalid` when it does not validate. */
export const layer = (bundle: Bundle.Bundle): Layer.Layer<PolicyEngine, BundleInvalid> =>
  Layer.effect(PolicyEngine, Effect.map(load(bundle), engine))

/** The engine of the bundle at `path` (a directory or one `*.cedar` file; `Bundle.read`), read once at start. */
export const layerPath = (
  path: string,
): Layer.Layer<PolicyEngine, BundleInvalid | BundleUnreadable, FileSystem.FileSystem> =>
  Layer.effect(
    PolicyEngine,
    Effect.flatMap(Bundle.read(path), (bundle) => Effect.map(load(bundle), engine)),
  )

// internal

/** The decision Cedar takes on `request`, asked every time. */
const evaluate = (loaded: Loaded, request: PolicyRequest): Either.Either<Explained, PolicyError> => {
  const answer = cedar().statefulIsAuthorized({
    principal: PRINCIPAL(request),
    action: actionOf(request.action),
    resource: resourceOf(request),
    context: contextOf(request),
    preparsedPolicySetId: loaded.bundle.digest,
    entities: entitiesOf(request),
  })
  // The request is a decoded `PolicyRequest` and the entities are built here, so Cedar refusing
  // them is a fault of this module or of the bindings, not of the caller.
  if (answer.type === "failure") {
    return Either.left(new PolicyUnavailable({ detail: answer.errors.map(detail).join("; ") }))
  }
  const info = (id: string): PolicyInfo => loaded.policies.get(id) ?? { id, effect: "permit", annotations: {} }
  const { decision, diagnostics } = answer.response
  // Cedar lists the deciding policies as a set; bundle order makes roles and reasons reproducible.
  const deciding = diagnostics.reason.map(info).sort((a, b) => rank(loaded, a.id) - rank(loaded, b.id))
  if (decision === "deny" && deciding.length > 0) {
    const reason = deciding.map((p) => p.annotations.reason ?? `forbidden by policy ${p.id}`).join("; ")
    return Either.right({ decision: Decision.Deny({ reason }), policies: deciding })
  }
  if (diagnostics.errors.length > 0) {
    const failed = diagnostics.errors.map((e) => `policy ${e.policyId} could not be evaluated: ${detail(e.error)}`)
    return Either.right({
      decision: Decision.Deny({ reason: failed.join("; ") }),
      policies: diagnostics.errors.map((e) => info(e.policyId)),
    })
  }
  if (decision === "deny") {
    return Either.right({ decision: Decision.Deny({ reason: `no policy permits ${request.action}` }), policies: [] })
  }
  const approvals = deciding.filter((p) => p.annotations.approval !== undefined)
  if (approvals.length === 0) return Either.right({ decision: Decision.Allow(), policies: deciding })
  const roles = [...new Set(approvals.flatMap((p) => rolesOf(p.annotations.approval ?? "")))]
  const reason = approvals
    .map(
      (p) =>
        p.annotations.reason ??
        `policy ${p.id} requires approval by ${rolesOf(p.annotations.approval ?? "").join(", ")}`,
    )
    .join("; ")
  return Either.right({ decision: Decision.RequireApproval({ roles, reason }), policies: approvals })
}

/** The process's one instance of the bindings, loaded on the first bundle (`CedarBindings`: why once, and why late). */
const cedar = CedarBindings.bindings

const rank = (loaded: Loaded, id: string): number => loaded.order.get(id) ?? Number.MAX_SAFE_INTEGER

const rolesOf = (approval: string): ReadonlyArray<string> =>
  approval
    .split(",")
    .map((r) => r.trim())
    .filter((r) => r.length > 0)

const detail = (e: Cedar.DetailedError): string => (e.help === null ? e.message : `${e.message} (${e.help})`)

const NS = "Agentplane"

const isPlatformAction = (action: string): boolean => action.startsWith("api:") || action === "agentplane.release"

const actionOf = (action: string): Cedar.TypeAndId =>
  isPlatformAction(action) ? { type: `${NS}::Action`, id: action } : { type: "Action", id: action }

const PRINCIPAL = (request: PolicyRequest): Cedar.TypeAndId => ({
  type: `${NS}::Agent`,
  id: request.principal.capability,
})

const resourceOf = (request: PolicyRequest): Cedar.TypeAndId =>
  request.resource._tag === "Api"
    ? { type: `${NS}::Api`, id: "api" }
    : { type: `${NS}::${request.resource._tag}`, id: request.resource.id }

const entitiesOf = (request: PolicyRequest): Cedar.Entities => {
  const { principal } = request
  const group = request.action.startsWith("api:")
    ? "api"
    : request.action === "agentplane.release"
      ? undefined
      : "effect"
  return [
    {
      uid: PRINCIPAL(request),
      attrs: { governedBy: principal.governedBy, tenant: principal.tenant, admittedBy: principal.admittedBy },
      parents: principal.roles.map((role) => ({ type: `${NS}::Role`, id: role })),
    },
    {
      uid: resourceOf(request),
      attrs: request.resource._tag === "Api" ? {} : { tenant: principal.tenant },
      parents: [],
    },
    // Without a schema in the call, an action's group is the entity's parent: effect kinds are
    // declared by the bundle, so they are placed in the group here, as the schema says they must be.
    {
      uid: actionOf(request.action),
      attrs: {},
      parents: group === undefined ? [] : [{ type: `${NS}::Action`, id: group }],
    },
  ]
}

const contextOf = (request: PolicyRequest): Cedar.Context => {
  const { context } = request
  const args = toCedar(context.args)
  return {
    mutates: context.mutates,
    phase: context.phase,
    label: context.label,
    provenances: [...context.provenances],
    argsJson: Canonical.text(context.args),
    ...(args !== undefined && typeof args === "object" && !Array.isArray(args) ? { args } : {}),
  }
}

/** JSON as a Cedar value, by the conversion in the module comment; `undefined` for `null`. */
const toCedar = (value: Json): Cedar.CedarValueJson | undefined => {
  if (value === null) return undefined
  if (typeof value === "number") return Number.isSafeInteger(value) ? value : JSON.stringify(value)
  if (typeof value !== "object") return value
  if (Array.isArray(value)) return value.flatMap((v: Json) => toCedarList(v))
  const record: Record<string, Cedar.CedarValueJson> = {}
  for (const [key, member] of Object.entries(value as { readonly [key: string]: Json })) {
    if (key.startsWith("__")) continue
    const converted = toCedar(member)
    if (converted !== undefined) record[key] = converted
  }
  return record
}

const toCedarList = (value: Json): ReadonlyArray<Cedar.CedarValueJson> => {
  const converted = toCedar(value)
  return converted === undefined ? [] : [converted]
}
