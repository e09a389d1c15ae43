/**
 * What the policy engine is asked (§7.12): who acts (principal), what they do (action), on what
 * (resource), and in which circumstances (context). Pure data; the Cedar layer maps it onto its
 * schema (`policy/AgentplaneSchema.ts`).
 */
import { Either, ParseResult, Schema } from "effect"
import { RequestMalformed } from "../errors/PolicyError.js"
import { Json } from "./Json.js"
import { Phase } from "./Phase.js"
import { TenantId } from "./Tenant.js"

/** A value's trust (§7.12): anything that came from outside the operator's hand is untrusted. */
export const Label = Schema.Literal("trusted", "untrusted")
export type Label = typeof Label.Type

/**
 * Who acts: a run acts as its capability, governed by an identity, for a tenant, admitted by an
 * actor; an HTTP caller (`api:*` actions) is its credential's actor with its roles, and names
 * itself as both capability and admitting actor.
 */
export class Principal extends Schema.Class<Principal>("Principal")({
  capability: Schema.NonEmptyTrimmedString,
  governedBy: Schema.String,
  tenant: TenantId,
  admittedBy: Schema.String,
  /** The credential's roles; empty for a run. */
  roles: Schema.optionalWith(Schema.Array(Schema.NonEmptyTrimmedString), { default: () => [] }),
}) {}

/** The run's case, else the run itself (§7.12); an `api:*` request with no resource names the API. */
export const Resource = Schema.Union(
  Schema.TaggedStruct("Case", { id: Schema.NonEmptyTrimmedString }),
  Schema.TaggedStruct("Run", { id: Schema.NonEmptyTrimmedString }),
  Schema.TaggedStruct("Api", {}),
)
export type Resource = typeof Resource.Type

/** The circumstances of the act. */
export class Context extends Schema.Class<Context>("Context")({
  /** Whether the effect changes the world (a refund does, a lookup does not). */
  mutates: Schema.Boolean,
  phase: Phase,
  /** The effect's canonical arguments as JSON. */
  args: Json,
  /** The join of the labels of everything the step has received so far. */
  label: Label,
  /** Where the untrusted part came from: `case`, `event:<kind>`, `task`, `model:<name>`, `tool:<name>`. */
  provenances: Schema.Array(Schema.String),
}) {}

/**
 * One question for the engine. `action` is an effect kind, an HTTP route's `api:<route action>`,
 * or `agentplane.release`.
 */
export class PolicyRequest extends Schema.Class<PolicyRequest>("PolicyRequest")({
  principal: Principal,
  action: Schema.NonEmptyTrimmedString,
  resource: Resource,
  context: Context,
}) {}

/**
 * A request as written in JSON (the CLI's `--request`), or `RequestMalformed` naming each field
 * that is missing or wrong. Unknown fields are refused, not ignored: a misspelt `lable` dropped
 * silently would be decided as if the field were absent.
 */
export const decode = (u: unknown): Either.Either<PolicyRequest, RequestMalformed> =>
  Either.mapLeft(decodeUnknown(u), (error) => new RequestMalformed({ detail: issues(error) }))

// internal

const decodeUnknown = Schema.decodeUnknownEither(PolicyRequest, { onExcessProperty: "error", errors: "all" })

const issues = (error: ParseResult.ParseError): string =>
  ParseResult.ArrayFormatter.formatErrorSync(error)
    .map((issue) => (issue.path.length === 0 ? issue.message : `${issue.path.join(".")}: ${issue.message}`))
    .join("; ")
