/**
 * What a step has received (§7.12): every value handed to a step body carries a label (trusted or
 * untrusted) and a provenance, and an effect's outbound label is the join of everything its step
 * received so far: untrusted wins. The join is per step and conservative: which value an effect's
 * arguments were computed from is not traced, so a step that read an email body acts as one
 * steered by it until it releases that value (`release`), whatever its next call's arguments are.
 *
 * A Flow is rebuilt on every execution from the same inputs in the same order (replay hands a
 * step the same journaled answers), so the labels it computes are the journaled ones.
 */
import type { Label } from "../domain/PolicyRequest.js"

/** One value a step received. */
interface Entry {
  readonly value: unknown
  readonly provenance: string
  readonly label: Label
  released: boolean
}

export interface Flow {
  /** Records a value the step received; trusted values are kept too, so a release can name what it released. */
  readonly receive: (value: unknown, provenance: string, label: Label) => void
  /** The join of every unreleased value received: `untrusted` if any of them is. */
  readonly label: () => Label
  /** Where the untrusted part of the join came from, each provenance once, in the order received. */
  readonly provenances: () => ReadonlyArray<string>
  /**
   * The provenances `release(value)` would declassify: of every unreleased untrusted value
   * received that is `value` itself or, for an answer the step copied, `sameValue` to it.
   */
  readonly releasable: (value: unknown, sameValue: (a: unknown, b: unknown) => boolean) => ReadonlyArray<string>
  /** Declassifies what `releasable` names, for the rest of the step. */
  readonly release: (value: unknown, sameValue: (a: unknown, b: unknown) => boolean) => void
}

export const make = (): Flow => {
  const entries: Array<Entry> = []
  const untrusted = () => entries.filter((e) => e.label === "untrusted" && !e.released)
  return {
    receive: (value, provenance, label) => {
      entries.push({ value, provenance, label, released: false })
    },
    label: () => (untrusted().length > 0 ? "untrusted" : "trusted"),
    provenances: () => [...new Set(untrusted().map((e) => e.provenance))],
    releasable: (value, sameValue) => [...new Set(matching(value, sameValue).map((e) => e.provenance))],
    release: (value, sameValue) => {
      for (const e of matching(value, sameValue)) e.released = true
    },
  }
  function matching(value: unknown, sameValue: (a: unknown, b: unknown) => boolean): Array<Entry> {
    return untrusted().filter((e) => e.value === value || sameValue(e.value, value))
  }
}

/**
 * Decision: how an admission label (the free text `Run.labeled` takes) maps to trust. A label is
 * trusted only when it names the operator's own hand: `trusted`, `operator`, `operator:<who>`, or
 * `api:<actor>` (a caller that authenticated with a credential of the operator's table). Anything
 * else (`email`, `event:…`, `web`, a typo) is untrusted: an unknown source fails closed.
 */
export const admissionLabel = (label: string): Label =>
  label === "trusted" || label === "operator" || label.startsWith("operator:") || label.startsWith("api:")
    ? "trusted"
    : "untrusted"

/** The provenance an admitted input is received with. */
export const inputProvenance = (label: string): string => `input:${label}`

/**
 * The label and provenance of an effect's answer, by its kind. The runtime's clock, randomness,
 * calendar resolutions, case versions and status changes are its own (trusted); the case's state,
 * an event's payload, a task's decision, a model's, a tool's and an MCP tool's output came from outside it.
 */
export const answerOf = (kind: string, args: unknown): { readonly label: Label; readonly provenance: string } => {
  switch (kind) {
    case "clock.now":
    case "random.next":
    case "deadline.resolve":
    case "case.write_state":
    case "case.set_status":
    case "case.transition_deadline":
    case "timer.sleep":
    case "task.open":
      return { label: "trusted", provenance: kind }
    case "case.read_state":
      return { label: "untrusted", provenance: "case" }
    case "model.generate":
      return { label: "untrusted", provenance: `model:${modelName(args)}` }
    default:
      return {
        label: "untrusted",
        // An MCP tool's kind is already its provenance (`mcp:<server>/<tool>`, §7.14).
        provenance: kind.startsWith("tool.")
          ? `tool:${kind.slice("tool.".length)}`
          : kind.startsWith("mcp:")
            ? kind
            : `tool:${kind}`,
      }
  }
}

/** The provenance of an event's payload received by a wait. */
export const eventProvenance = (eventKind: string): string => `event:${eventKind}`

/** The provenance of a person's decision on a task. */
export const TASK_PROVENANCE = "task"

// internal

const modelName = (args: unknown): string => {
  const wire = (args as { readonly wire?: { readonly model?: unknown } } | null)?.wire
  return typeof wire?.model === "string" ? wire.model : "unknown"
}
