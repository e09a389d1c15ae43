/**
 * A JSON route policy of the older form (`JsonPolicy`: allow rules of actions and roles) written as
 * Cedar for the same bundle that governs runs (§7.12), so an operator moving to one policy gets
 * the text that decides exactly as the file did: one `permit` per role, naming every route
 * action the file lets that role take (families such as `api:task.*` already expanded), and
 * nothing else, since Cedar denies what no permit allows, as the file did.
 */
import { Action } from "./Authorizer.js"
import type * as JsonPolicy from "./JsonPolicy.js"

/** `policy` as the text of one `.cedar` file: a comment naming its source, then `policies`. */
export const translate = (policy: JsonPolicy.Policy): string =>
  `// Translated from ${policy.source}: what it allowed, per role; everything else is denied.\n${policies(policy)}`

/**
 * The permits alone, without a comment, so the text means the same with its line breaks turned
 * into spaces (as the CLI's one-line refusals print it): Cedar reads whitespace as whitespace.
 */
export const policies = (policy: JsonPolicy.Policy): string => {
  const byRole = new Map<string, Array<Action>>()
  // In the closed list's order, so the text is the same whatever order the file listed rules in.
  for (const action of Action.literals) {
    for (const role of policy.allowed.get(action) ?? []) {
      const actions = byRole.get(role) ?? []
      actions.push(action)
      byRole.set(role, actions)
    }
  }
  const roles = [...byRole.keys()].sort()
  return roles
    .map((role) => {
      const actions = (byRole.get(role) ?? []).map((a) => `    Agentplane::Action::${quoted(a)}`).join(",\n")
      return `@id(${quoted(`routes for ${role}`)})\npermit (\n  principal in Agentplane::Role::${quoted(role)},\n  action in [\n${actions}\n  ],\n  resource\n);\n`
    })
    .join("\n")
}

/** A Cedar string literal: JSON's escaping is a subset Cedar reads the same way. */
const quoted = (text: string): string => JSON.stringify(text)
