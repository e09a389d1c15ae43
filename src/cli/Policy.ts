/**
 * `agentplane policy` (§7.12): the operator's tools for a Cedar bundle, with no store and no
 * server. `validate <bundle>` checks it against the schema and prints its digest; `check <bundle>
 * --request <json>` prints the decision on one request and the policies that took it; `schema`
 * prints agentplane's Cedar schema, to write policies and effect declarations against;
 * `translate <policy.json>` prints a JSON route policy as Cedar (`http/CedarTranslation.ts`), as
 * text to save into a bundle.
 *
 * A bundle is a directory of `*.cedar` policies and `*.cedarschema` declarations, or one `*.cedar`
 * file (`policy/Bundle.ts`). Output is one JSON object on standard output. Exit codes: 0 valid (or
 * decided, whatever the decision); 2 the bundle is invalid (the report lists every problem, and
 * standard error says so in one line); 1 nothing could be checked (a path that cannot be read, a
 * malformed request).
 */
import { Args, Command, Options } from "@effect/cli"
import { FileSystem } from "@effect/platform"
import { Console, Data, Effect, Either, Option } from "effect"
import * as Decision from "../domain/Decision.js"
import * as JsonText from "../domain/JsonText.js"
import * as PolicyRequest from "../domain/PolicyRequest.js"
import { RequestMalformed } from "../errors/PolicyError.js"
import * as CedarTranslation from "../http/CedarTranslation.js"
import * as JsonPolicy from "../http/JsonPolicy.js"
import * as PolicyEngineCedar from "../layers/PolicyEngineCedar.js"
import * as AgentplaneSchema from "../policy/AgentplaneSchema.js"
import * as Bundle from "../policy/Bundle.js"
import { exitWith } from "./Export.js"

const what = Args.choice(
  [
    ["validate", "validate"],
    ["check", "check"],
    ["schema", "schema"],
    ["translate", "translate"],
  ] as const,
  { name: "validate|check|schema|translate" },
).pipe(Args.withDescription("required: what to do (see above)"))

const bundle = Args.text({ name: "bundle" }).pipe(
  Args.withDescription(
    "a directory of *.cedar policies and *.cedarschema declarations, or one *.cedar file; needed by validate and check, absent for schema; for translate, the JSON route policy",
  ),
  Args.optional,
)

const request = Options.text("request").pipe(
  Options.withDescription(
    "the request as JSON, inline (starting with {) or the path of a file holding it; needed by check, absent otherwise",
  ),
  Options.optional,
)

/**
 * The bundle at `path` loaded; or none, once a refused bundle (it does not validate, or holds no
 * policy file) is reported with exit code 2. A bundle that cannot be read at all fails (exit 1).
 */
const loadOrReport = (path: string) =>
  Bundle.read(path).pipe(
    Effect.flatMap(PolicyEngineCedar.load),
    Effect.map(Option.some),
    Effect.catchTag("BundleInvalid", (e) =>
      Console.log(JSON.stringify({ valid: false, source: path, problems: e.problems })).pipe(
        Effect.zipRight(Console.error(`agentplane: ${e.message}`)),
        Effect.zipRight(exitWith(2)),
        Effect.as(Option.none<PolicyEngineCedar.Loaded>()),
      ),
    ),
  )

const validate = (bundle: string) =>
  Effect.gen(function* () {
    const found = yield* loadOrReport(bundle)
    if (Option.isNone(found)) return
    const loaded = found.value
    yield* Console.log(
      JSON.stringify({
        valid: true,
        source: bundle,
        digest: loaded.bundle.digest,
        policies: [...loaded.policies.keys()],
      }),
    )
  })

/** The request's JSON: the option itself when it starts with `{`, else the file it names. */
const requestText = (value: string) =>
  value.trimStart().startsWith("{")
    ? Effect.succeed(value)
    : Effect.flatMap(FileSystem.FileSystem, (fs) =>
        fs
          .readFileString(value)
          .pipe(Effect.mapError((e) => new RequestMalformed({ detail: `${value} cannot be read: ${e.message}` }))),
      )

const check = (bundle: string, request: string) =>
  Effect.gen(function* () {
    const text = yield* requestText(request)
    const json = yield* Either.mapLeft(
      JsonText.parse(text),
      (problem) => new RequestMalformed({ detail: `not JSON: ${problem}` }),
    )
    const decoded = yield* PolicyRequest.decode(json)
    const found = yield* loadOrReport(bundle)
    if (Option.isNone(found)) return
    const loaded = found.value
    const explained = yield* PolicyEngineCedar.explain(loaded, decoded)
    yield* Console.log(
      JSON.stringify({
        ...Decision.toJson(explained.decision),
        policies: explained.policies,
        bundle: loaded.bundle.digest,
      }),
    )
  })

/**
 * The JSON route policy at `path` as Cedar text, checked to load as a bundle before it is
 * printed: what an operator puts in the bundle so its routes are decided as the file decided them.
 */
const translate = (path: string) =>
  Effect.gen(function* () {
    const policy = yield* JsonPolicy.fromFile(path)
    const text = CedarTranslation.translate(policy)
    yield* PolicyEngineCedar.load(Bundle.make(path, [{ name: "routes.cedar", text }]))
    yield* Console.log(text)
  })

/** The operator left out what the chosen action needs. */
export class MissingArgument extends Data.TaggedError("MissingArgument")<{ readonly message: string }> {}

export const command = Command.make("policy", { what, bundle, request }, ({ what, bundle, request }) =>
  Effect.gen(function* () {
    if (what === "schema") return yield* Console.log(AgentplaneSchema.text)
    if (Option.isNone(bundle)) {
      return yield* new MissingArgument({
        message: `policy ${what} needs a bundle: agentplane policy ${what} <bundle>`,
      })
    }
    if (what === "validate") return yield* validate(bundle.value)
    if (what === "translate") return yield* translate(bundle.value)
    if (Option.isNone(request)) {
      return yield* new MissingArgument({ message: "policy check needs --request <json, or a file holding it>" })
    }
    return yield* check(bundle.value, request.value)
  }),
).pipe(
  Command.withDescription(
    "Cedar policy bundles. `policy validate <bundle>`: check a bundle against the schema; exit 0 with its digest, 2 listing its problems. `policy check <bundle> --request <json>`: the decision on one request and the policies that took it. `policy schema`: print agentplane's Cedar schema. `policy translate <policy.json>`: a JSON route policy as the Cedar text that decides every route as it did",
  ),
)
