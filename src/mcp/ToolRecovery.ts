/**
 * What a tool's annotations say about recovery (§7.14, §7.1). Annotations are the server's hints,
 * not promises, so a definition may override them, and a tool whose annotations are unknown (the
 * server was not reachable when its tools were listed) is taken for the worst case: it mutates,
 * and a call left in doubt goes to an operator.
 */
import { Option } from "effect"
import * as Run from "../domain/Run.js"

/** The MCP tool annotations recovery reads (`ToolAnnotations` of the protocol). */
export interface Hints {
  readonly readOnlyHint?: boolean | undefined
  readonly idempotentHint?: boolean | undefined
}

export interface Declared {
  readonly mutates: boolean
  readonly recovery: Run.Recovery
}

/**
 * `readOnlyHint` → a read, retried; `idempotentHint` → mutating, retried with the same provider
 * key; otherwise (or unknown) → mutating, `RequiresOperator`. The protocol's defaults are false
 * for both hints, so an absent hint counts as false.
 */
export const fromHints = (hints: Hints | undefined): Declared => {
  if (hints?.readOnlyHint === true) return { mutates: false, recovery: Run.Recovery.Retry() }
  if (hints?.idempotentHint === true) {
    return { mutates: true, recovery: Run.Recovery.Idempotent({ key: Option.none() }) }
  }
  return { mutates: true, recovery: Run.Recovery.RequiresOperator() }
}
