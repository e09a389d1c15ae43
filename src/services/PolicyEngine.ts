/**
 * PolicyEngine (§7.12): decides whether a principal may take an action on a resource, for the
 * runtime before it announces an effect and for the HTTP routes.
 *
 * Beside the service, the two engines that need no bundle. `denyAll` is what a deployment without
 * a policy gets: every effect is denied, saying why, so forgetting `--policy` can never mean
 * "anything goes". `allowAll` is the explicit opposite, chosen by the demo and by tests. Each has
 * a fixed digest (SHA-256 of its marker text) so a run admitted under it records which one it
 * was, and a Resume under a real bundle is told apart. The Cedar engine is `PolicyEngineCedar`.
 */
import { Context, Effect, Layer } from "effect"
import { Decision } from "../domain/Decision.js"
import * as Digest from "../domain/Digest.js"
import type { PolicyRequest } from "../domain/PolicyRequest.js"
import type { PolicyError } from "../errors/PolicyError.js"

/** The identity of the policy a decision was taken under, recorded in `RunAdmitted.policy_bundle`. */
export interface BundleIdentity {
  /** SHA-256 of the bundle's policies and schema (`policy/Bundle.ts` states the rule). */
  readonly digest: Digest.Digest
  /** Where the bundle came from, for messages: a directory, a file, or the name of a fixed engine. */
  readonly source: string
}

export class PolicyEngine extends Context.Tag("agentplane/PolicyEngine")<
  PolicyEngine,
  {
    readonly bundle: BundleIdentity
    /** The decision on `request`, a pure function of the request and the bundle (so asking twice is harmless); fails with `PolicyUnavailable` when the evaluator faults, never for a denial. */
    readonly decide: (request: PolicyRequest) => Effect.Effect<Decision, PolicyError>
  }
>() {}

/** The text whose digest identifies `allowAll`. */
export const ALLOW_ALL_MARKER = "agentplane policy: allow all"
/** The text whose digest identifies `denyAll`. */
export const DENY_ALL_MARKER = "agentplane policy: none configured, deny all"

/** Why `denyAll` denies. */
export const NO_POLICY_REASON =
  "no policy is configured, so every effect is denied: give a Cedar bundle (serve --policy), or choose PolicyEngine.allowAll explicitly"

/** Allows every request, whatever it is. */
export const allowAllEngine: PolicyEngine["Type"] = PolicyEngine.of({
  bundle: { digest: Digest.of(ALLOW_ALL_MARKER), source: "PolicyEngine.allowAll" },
  decide: () => Effect.succeed(Decision.Allow()),
})

/** Denies every request with `NO_POLICY_REASON`. */
export const denyAllEngine: PolicyEngine["Type"] = PolicyEngine.of({
  bundle: { digest: Digest.of(DENY_ALL_MARKER), source: "no policy" },
  decide: () => Effect.succeed(Decision.Deny({ reason: NO_POLICY_REASON })),
})

export const allowAll: Layer.Layer<PolicyEngine> = Layer.succeed(PolicyEngine, allowAllEngine)

/** The default: what a runtime without a configured engine must use. */
export const denyAll: Layer.Layer<PolicyEngine> = Layer.succeed(PolicyEngine, denyAllEngine)
