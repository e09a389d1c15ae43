/**
 * The policy file (§8.1): allow rules, everything else denied. JSON of exactly this shape:
 *
 *   { "allow": [ { "action": "api:task.*", "roles": ["reviewer"] },
 *                { "action": "api:admin.halt", "roles": ["admin"] } ] }
 *
 * `action` is one action (`Authorizer.Action`) or a family `<prefix>.*` covering every action
 * that starts with `<prefix>.`; `roles` is a non-empty list. A caller may take an action when
 * some rule covering it lists one of the caller's roles. An unknown action, a pattern covering no
 * action, an empty role list, an empty `allow` list or an unknown field refuses the policy with
 * `PolicyInvalid`, and the server does not start: a typo must not silently deny (or, worse,
 * silently allow) anything. `serve` also refuses a rule naming a role no credential holds
 * (`checkRoles`), since that rule can only be a misspelling.
 */
import { FileSystem } from "@effect/platform"
import { Effect, Either, Layer, Metric, Schema } from "effect"
import * as JsonText from "../domain/JsonText.js"
import { Action, Authorizer, Forbidden } from "./Authorizer.js"
import type { Caller } from "./Caller.js"
import * as Issues from "./internal/Issues.js"

/** The policy could not be read or a rule is invalid; `source` names the file or variable. */
export class PolicyInvalid extends Schema.TaggedError<PolicyInvalid>()("PolicyInvalid", {
  source: Schema.String,
  detail: Schema.String,
}) {
  override get message(): string {
    return `policy ${this.source}: ${this.detail}`
  }
}

/** One allow rule as written in the file. */
export const Rule = Schema.Struct({
  action: Schema.String,
  roles: Schema.Array(Schema.NonEmptyTrimmedString).pipe(
    Schema.minItems(1, { message: () => "must list at least one role (a rule for nobody is a mistake)" }),
  ),
})
export type Rule = typeof Rule.Encoded

/** The file as written. */
export const File = Schema.Struct({ allow: Schema.Array(Schema.Unknown) })
export type File = { readonly allow: ReadonlyArray<Rule> }

/** A checked policy: for each action, the roles that may take it (absent: nobody). */
export interface Policy {
  /** Where it was read from, for messages. */
  readonly source: string
  readonly rules: ReadonlyArray<Rule>
  readonly allowed: ReadonlyMap<Action, ReadonlySet<string>>
}

/** Requests the authoriser refused, by action (§10). */
export const denials = Metric.counter("agentplane.policy.denials", {
  description: "requests the policy denied",
  incremental: true,
})

/** Checks `file` (the parsed JSON) and expands each pattern over the closed list of actions. */
export const decode = (file: unknown, source: string): Either.Either<Policy, PolicyInvalid> => {
  const refuse = (detail: string) => Either.left(new PolicyInvalid({ source, detail }))
  const top = decodeFile(file)
  if (Either.isLeft(top)) {
    return refuse(`must be {"allow": [{"action", "roles"}, …]}: ${Issues.format(top.left)}`)
  }
  if (top.right.allow.length === 0) {
    return refuse('"allow" is empty: every request would be refused (403); list the rules')
  }
  const allowed = new Map<Action, Set<string>>()
  const rules: Array<Rule> = []
  for (const [index, raw] of top.right.allow.entries()) {
    const rule = decodeRule(raw)
    if (Either.isLeft(rule)) return refuse(`rule ${index}: ${Issues.format(rule.left)}`)
    rules.push(rule.right)
    const actions = covered(rule.right.action)
    if (Either.isLeft(actions)) return refuse(`rule ${index}: ${actions.left}`)
    for (const action of actions.right) {
      const roles = allowed.get(action) ?? new Set<string>()
      for (const role of rule.right.roles) roles.add(role)
      allowed.set(action, roles)
    }
  }
  return Either.right({ source, rules, allowed })
}

/**
 * `policy` if every role its rules name is one of `held` (the credential table's roles), else
 * refused naming the first rule and role that is not: a rule for a role nobody has grants
 * nothing, so it is a misspelling, and the caller it was meant for is denied without a word.
 */
export const checkRoles = (policy: Policy, held: ReadonlyArray<string>): Either.Either<Policy, PolicyInvalid> => {
  const known = new Set(held)
  for (const [index, rule] of policy.rules.entries()) {
    const missing = rule.roles.find((role) => !known.has(role))
    if (missing !== undefined) {
      return Either.left(
        new PolicyInvalid({
          source: policy.source,
          detail: `rule ${index} (${JSON.stringify(rule.action)}) names role ${JSON.stringify(missing)}, which no credential holds (held: ${held.join(", ")})`,
        }),
      )
    }
  }
  return Either.right(policy)
}

/**
 * `decode` of JSON text, read strictly (`JsonText.parse`): with `JSON.parse` a second `allow`
 * key silently replaced the first, and whoever reviewed the first read a different policy.
 */
export const parse = (json: string, source: string): Either.Either<Policy, PolicyInvalid> =>
  Either.flatMap(
    Either.mapLeft(
      JsonText.parse(json),
      (problem) => new PolicyInvalid({ source, detail: `is not valid JSON: ${problem}` }),
    ),
    (file) => decode(file, source),
  )

/** Whether `policy` lets `caller` take `action`: some rule covering it lists one of the caller's roles. */
export const allows = (policy: Policy, caller: Caller, action: Action): boolean => {
  const roles = policy.allowed.get(action)
  return roles !== undefined && caller.roles.some((role) => roles.has(role))
}

/**
 * The authoriser of `policy`: deny by default, each denial counted by action. `resource` is not
 * consulted yet; rules name actions only.
 */
export const layer = (policy: Policy): Layer.Layer<Authorizer> =>
  Layer.succeed(
    Authorizer,
    Authorizer.of({
      authorize: (caller, action) =>
        allows(policy, caller, action)
          ? Effect.void
          : Effect.zipRight(
              Metric.increment(Metric.tagged(denials, "action", action)),
              Effect.fail(new Forbidden({ action, message: `no policy rule allows ${action} for this caller` })),
            ),
    }),
  )

/** The policy in the JSON file at `path`. */
export const fromFile = (path: string): Effect.Effect<Policy, PolicyInvalid, FileSystem.FileSystem> =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const text = yield* fs
      .readFileString(path)
      .pipe(Effect.mapError((e) => new PolicyInvalid({ source: path, detail: `cannot be read: ${e.message}` })))
    return yield* parse(text, path)
  })

/** The authoriser of the policy in the JSON file at `path`, read once at start. */
export const layerFile = (path: string): Layer.Layer<Authorizer, PolicyInvalid, FileSystem.FileSystem> =>
  Layer.unwrapEffect(Effect.map(fromFile(path), layer))

/** The authoriser of a policy given as JSON text, e.g. the value of `AGENTPLANE_POLICY_JSON`. */
export const layerJson = (json: string, source: string): Layer.Layer<Authorizer, PolicyInvalid> =>
  Layer.unwrapEffect(Effect.map(parse(json, source), layer))

// internal

const decodeFile = Schema.decodeUnknownEither(File, { onExcessProperty: "error" })
const decodeRule = Schema.decodeUnknownEither(Rule, { onExcessProperty: "error", errors: "all" })

const ACTIONS: ReadonlyArray<Action> = Action.literals

/** The actions `pattern` names: itself when it is one, every `<prefix>.` action for `<prefix>.*`. */
const covered = (pattern: string): Either.Either<ReadonlyArray<Action>, string> => {
  // A rule for it once read as if it let a role scrape, and did nothing: say what does.
  if (pattern === "api:metrics.read") {
    return Either.left(
      `${JSON.stringify(pattern)}: /metrics takes only the operator's scrape credential (--metrics-token-digest), never a policy rule; remove the rule`,
    )
  }
  if (pattern.endsWith(".*")) {
    const prefix = pattern.slice(0, -1)
    const family = prefix.includes("*") ? [] : ACTIONS.filter((action) => action.startsWith(prefix))
    return family.length > 0
      ? Either.right(family)
      : Either.left(`${JSON.stringify(pattern)} covers no action (known: ${ACTIONS.join(", ")})`)
  }
  return Schema.is(Action)(pattern)
    ? Either.right([pattern])
    : Either.left(
        `${JSON.stringify(pattern)} is neither an action nor a "<prefix>.*" family (known: ${ACTIONS.join(", ")})`,
      )
}
