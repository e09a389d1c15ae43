/**
 * The roles a bundle's policies name (`Agentplane::Role::"…"`, in a scope or a condition), so
 * `serve` can refuse a bundle naming a role no credential holds: a permit for a role nobody has
 * grants nothing, so it is a misspelling, and the caller it was meant for is denied without a
 * word (a forbid for it, worse, forbids nobody). Cedar's validator cannot see this: a role is an
 * entity id, not a type. Only HTTP callers are members of roles (a run's principal has none), so
 * every role named is a credential's. `@approval("…")` roles are a task's deciders, named in an
 * annotation, and are not counted here.
 *
 * Read from the policies' JSON form, never their text: a comment or a string that spells a role
 * names none.
 */
import type { Bundle } from "./Bundle.js"
import { bindings as cedar } from "./CedarBindings.js"

/** One role a policy names, with the policy's id (its `@id`, else `<file>#<n>`, as the engine names it). */
export interface Named {
  readonly role: string
  readonly policy: string
}

/** Every role `bundle`'s policies name, in bundle order; a policy that does not parse names none (loading refuses it). */
export const named = (bundle: Bundle): ReadonlyArray<Named> => {
  const found: Array<Named> = []
  for (const file of bundle.policies) {
    const parts = cedar().policySetTextToParts(file.text)
    if (parts.type === "failure") continue
    for (const [index, text] of parts.policies.entries()) {
      const json = cedar().policyToJson(text)
      if (json.type === "failure") continue
      const policy = json.json.annotations?.id ?? `${file.name}#${index}`
      for (const role of new Set(rolesIn(json.json))) found.push({ role, policy })
    }
  }
  return found
}

/** The first role `bundle` names that is not one of `held`, if any. */
export const unheld = (bundle: Bundle, held: ReadonlyArray<string>): Named | undefined => {
  const known = new Set(held)
  return named(bundle).find((n) => !known.has(n.role))
}

// internal

const ROLE = "Agentplane::Role"

/**
 * The ids of every `Agentplane::Role` entity reference in a policy's JSON: a scope's
 * `{"entity": {type, id}}` and a condition's `{"__entity": {type, id}}` both hold `{type, id}`.
 */
const rolesIn = (node: unknown): ReadonlyArray<string> => {
  if (Array.isArray(node)) return node.flatMap(rolesIn)
  if (typeof node !== "object" || node === null) return []
  const record = node as Record<string, unknown>
  const here = record.type === ROLE && typeof record.id === "string" ? [record.id] : []
  return [...here, ...Object.values(record).flatMap(rolesIn)]
}
