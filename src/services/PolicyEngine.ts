/**
 * PolicyEngine (§7.12): decides whether a principal may take an action on a resource, for the
 * runtime before it announces an effect and for the HTTP routes.
 */
import { Context, type Effect } from "effect"
import type { Decision } from "../domain/Decision.js"
import type { Digest } from "../domain/Digest.js"
import type { PolicyRequest } from "../domain/PolicyRequest.js"
import type { PolicyError } from "../errors/PolicyError.js"

/** The identity of the policy a decision was taken under, recorded in `RunAdmitted.policy_bundle`. */
export interface BundleIdentity {
  /** SHA-256 of the bundle's policies and schema (`policy/Bundle.ts` states the rule). */
  readonly digest: Digest
  /** Where the bundle came from, for messages: a directory, a file, or the name of a fixed engine. */
  readonly source: string
}

export class PolicyEngine extends Context.Tag("agentplane/PolicyEngine")<
  PolicyEngine,
  {
    readonly bundle: BundleIdentity
    /** The decision on `request`, a pure function of the request and the bundle; fails with `RequestMalformed` when the request cannot be put to the policies and `PolicyUnavailable` when the evaluator faults. */
    readonly decide: (request: PolicyRequest) => Effect.Effect<Decision, PolicyError>
  }
>() {}
