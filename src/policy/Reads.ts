/**
 * What a bundle's policies can read of a request, and so which parts of a request can change its
 * decision: the key under which the Cedar engine remembers decisions (`PolicyEngineCedar`).
 *
 * Why this is sound: Cedar is deterministic, and the engine builds the entities it hands Cedar
 * from the request alone (the principal's entity with its attributes and roles, the resource's,
 * the action's group), so a decision is a function of the bundle and the request. A part of the
 * request no policy reads cannot change it. Read from each policy's JSON form (never its text):
 * - the principal is read when a policy's scope constrains it or a condition names `principal`;
 *   likewise the resource;
 * - the context is read attribute by attribute when a condition only ever writes
 *   `context.<attr>` or `context has <attr>`, else (`context` as a whole value) entirely;
 * - an entity literal of a type the engine builds from the request (an `Agentplane::Agent`,
 *   `Case`, `Run` or `Api`) reaches that entity's attributes without naming a variable, so it
 *   counts as reading the principal and the resource; roles and actions carry nothing of the
 *   request beyond the action, which every key holds.
 * Anything this module does not recognise counts as read: a key that is too fine only misses.
 */
import type * as Cedar from "@cedar-policy/cedar-wasm/nodejs"
import * as Canonical from "../domain/Canonical.js"
import type { PolicyRequest } from "../domain/PolicyRequest.js"

/** Which parts of a request a bundle's policies read. */
export interface Reads {
  readonly principal: boolean
  readonly resource: boolean
  /** The context attributes read, or `"all"`. */
  readonly context: "all" | ReadonlySet<string>
}

/** What `policies` (one bundle's, in their JSON form) read. */
export const of = (policies: Iterable<Cedar.PolicyJson>): Reads => {
  const found = { principal: false, resource: false, context: new Set<string>(), wholeContext: false }
  for (const policy of policies) {
    if (policy.principal.op !== "All") found.principal = true
    if (policy.resource.op !== "All") found.resource = true
    for (const clause of policy.conditions) walk(clause.body, found)
  }
  return {
    principal: found.principal,
    resource: found.resource,
    context: found.wholeContext ? "all" : found.context,
  }
}

/**
 * The key of `request` under `reads`: two requests with one key get one decision. The action is
 * always in it; the context's attributes are keyed as the engine derives them (`args` and
 * `argsJson` both from the canonical arguments).
 */
export const key = (reads: Reads, request: PolicyRequest): string => {
  const parts: Array<unknown> = [request.action]
  if (reads.principal) {
    const p = request.principal
    parts.push(p.capability, p.governedBy, p.tenant, p.admittedBy, p.roles)
  }
  if (reads.resource) parts.push(request.resource._tag, "id" in request.resource ? request.resource.id : null)
  const context = request.context
  const attrs = reads.context === "all" ? CONTEXT_ATTRS : [...reads.context].sort()
  for (const attr of attrs) {
    parts.push(attr)
    switch (attr) {
      case "mutates":
        parts.push(context.mutates)
        break
      case "phase":
        parts.push(context.phase)
        break
      case "label":
        parts.push(context.label)
        break
      case "provenances":
        parts.push(context.provenances)
        break
      case "args":
      case "argsJson":
        parts.push(Canonical.text(context.args))
        break
      // The schema declares no other attribute, and strict validation refuses a policy that reads
      // one, so any other name is absent from every request alike.
    }
  }
  return JSON.stringify(parts)
}

// internal

/** Every attribute the engine puts in an effect's context (`PolicyEngineCedar.contextOf`). */
const CONTEXT_ATTRS = ["args", "argsJson", "label", "mutates", "phase", "provenances"] as const

/** Entity types the engine builds from the request (it builds roles only as parents, without attributes). */
const REQUEST_ENTITIES = new Set(["Agentplane::Agent", "Agentplane::Case", "Agentplane::Run", "Agentplane::Api"])

interface Found {
  principal: boolean
  resource: boolean
  readonly context: Set<string>
  wholeContext: boolean
}

const isVar = (node: unknown, name: string): boolean =>
  typeof node === "object" && node !== null && (node as { readonly Var?: unknown }).Var === name

/** Marks what the expression `node` reads; unknown shapes are walked member by member. */
const walk = (node: unknown, found: Found): void => {
  if (Array.isArray(node)) {
    for (const member of node) walk(member, found)
    return
  }
  if (typeof node !== "object" || node === null) return
  const expr = node as Record<string, unknown>
  for (const op of [".", "has"] as const) {
    const access = expr[op] as { readonly left?: unknown; readonly attr?: unknown } | undefined
    if (access !== undefined && isVar(access.left, "context")) {
      // `context has a.b` names a path; its first step is the context's attribute.
      const attr = Array.isArray(access.attr) ? access.attr[0] : access.attr
      if (typeof attr === "string") found.context.add(attr)
      else found.wholeContext = true
      return
    }
  }
  if ("Var" in expr) {
    if (expr.Var === "principal") found.principal = true
    else if (expr.Var === "resource") found.resource = true
    else if (expr.Var === "context") found.wholeContext = true
    return
  }
  if ("Value" in expr) {
    if (namesRequestEntity(expr.Value)) {
      found.principal = true
      found.resource = true
    }
    return
  }
  for (const member of Object.values(expr)) walk(member, found)
}

/** Whether a literal holds (anywhere inside it) an entity the engine builds from the request. */
const namesRequestEntity = (value: unknown): boolean => {
  if (Array.isArray(value)) return value.some(namesRequestEntity)
  if (typeof value !== "object" || value === null) return false
  const entity = (value as { readonly __entity?: { readonly type?: unknown } }).__entity
  if (entity !== undefined) return typeof entity.type !== "string" || REQUEST_ENTITIES.has(entity.type)
  return Object.values(value).some(namesRequestEntity)
}
