/**
 * The JSON route policy of the older form (§8.1 before §7.12): allow rules, everything else
 * denied. JSON of exactly this shape:
 *
 *   { "allow": [ { "action": "api:task.*", "roles": ["reviewer"] },
 *                { "action": "api:admin.halt", "roles": ["admin"] } ] }
 *
 * `serve` does not decide routes by it: one Cedar bundle governs the routes and the runs, and a
 * file of this form is refused with its Cedar equivalent (`CedarTranslation`). It is still read,
 * strictly, for that translation (`agentplane policy translate`, the refusal), and `allows` is
 * the reference meaning the translation and the test bundles are held to. Decision: no
 * authoriser of this form is kept, so nothing can serve routes under a policy other than the
 * bundle's, and there is one place (`CedarAuthorizer`) where a route is decided.
 *
 * `action` is one action (`Authorizer.Action`) or a family `<prefix>.*` covering every action
 * that starts with `<prefix>.`; `roles` is a non-empty list. A caller may take an action when
 * some rule covering it lists one of the caller's roles. An unknown action, a pattern covering no
 * action, an empty role list, an empty `allow` list or an unknown field refuses the file with
 * `PolicyInvalid`: a translation of a typo would deny (or allow) what the author did not mean.
 */
import { FileSystem } from "@effect/platform"
import { Effect, Either, Schema } from "effect"
import * as JsonText from "../domain/JsonText.js"
import { Action } from "./Authorizer.js"
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

/** The policy in the JSON file at `path`. */
export const fromFile = (path: string): Effect.Effect<Policy, PolicyInvalid, FileSystem.FileSystem> =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const text = yield* fs
      .readFileString(path)
      .pipe(Effect.mapError((e) => new PolicyInvalid({ source: path, detail: `cannot be read: ${e.message}` })))
    return yield* parse(text, path)
  })

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
