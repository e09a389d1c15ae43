/**
 * A policy decision (§7.12): the effect may run, may not, or may run once a person holding one of
 * `roles` approves it. A result, not an error: the runtime branches on all three.
 */
import { Data } from "effect"

export type Decision = Data.TaggedEnum<{
  Allow: Record<never, never>
  Deny: { readonly reason: string }
  RequireApproval: { readonly roles: ReadonlyArray<string>; readonly reason: string }
}>
export const Decision = Data.taggedEnum<Decision>()

/** The decision as a JSON object, the form the CLI prints and a journal record would carry. */
export const toJson = (decision: Decision): { readonly decision: string; readonly [field: string]: unknown } =>
  Decision.$match(decision, {
    Allow: () => ({ decision: "Allow" }),
    Deny: ({ reason }) => ({ decision: "Deny", reason }),
    RequireApproval: ({ roles, reason }) => ({ decision: "RequireApproval", roles, reason }),
  })
