/**
 * A run's journal as a timeline: one entry per record, the effect's kind named on its
 * announcement and outcome (the outcome records name only the effect key), with attempts,
 * spend, trust labels and reasons as the records hold them.
 */
import { type Child, facts, h } from "../Dom.js"

// biome-ignore lint/suspicious/noExplicitAny: journal entries as the API's JSON shows them
export const timeline = (entries: ReadonlyArray<any>): HTMLElement => {
  const effects = new Map<string, string>()
  return h(
    "ol",
    { class: "cards timeline" },
    entries.map((e) => {
      const r = e.record
      if (r.kind === "EffectStarted" && e.effect !== null) effects.set(e.effect, r.descriptor?.kind ?? "effect")
      const effect = e.effect === null ? undefined : effects.get(e.effect)
      return h(
        "li",
        { class: r.kind === "RunSealed" ? "sealed" : "" },
        h("h3", {}, `${e.seq}. ${r.kind}${effect === undefined ? "" : `: ${effect}`}`),
        facts(details(r)),
      )
    }),
  )
}

// biome-ignore lint/suspicious/noExplicitAny: a record's payload
const details = (r: any): ReadonlyArray<readonly [string, Child]> => {
  switch (r.kind) {
    case "RunAdmitted":
      return [
        ["Capability", r.capability],
        // A journal written before definitions declared a version holds none (§7.13).
        ["Definition version", r.definition_version ?? "not recorded"],
        ["Input label", r.input_label],
      ]
    case "Patched":
      return [
        ["Marker", r.id],
        ["Path", r.value ? "new (the marker's changed path)" : "old (recorded before the marker)"],
      ]
    case "EffectStarted":
      return [
        ["Attempt", String(r.attempt)],
        ["Recovery", r.recovery],
        ["Mutates", r.mutates ? "yes" : "no"],
        ["Outbound label", r.outbound_label],
        ["Arguments", text(r.descriptor?.args)],
      ]
    case "EffectDone":
      return [
        ["Source label", r.source],
        ["Spend", text(r.spend)],
        ["Output", text(r.output)],
      ]
    case "EffectFailed":
      return [
        ["Disposition", r.disposition],
        ["Permanent", r.permanent ? "yes" : "no"],
        ["Spend", text(r.spend)],
        ["Error", text(r.error)],
      ]
    case "EffectReconciled":
      return [
        ["Disposition", r.disposition],
        ["Detail", r.detail],
        ["Spend", text(r.spend)],
      ]
    case "RunSuspended":
      return [
        [
          "Waiting for",
          r.reason.reason === "awaiting_event"
            ? `event ${r.reason.kind}`
            : `the time ${new Date(r.reason.until * 1000).toISOString()}`,
        ],
      ]
    case "RunSealed":
      return [
        ["Outcome", r.outcome],
        ["Reason", r.reason ?? "none given"],
      ]
    case "RunCancelled":
      return [
        ["By", r.actor],
        ["Reason", r.reason],
      ]
    default: {
      const { kind: _, ...rest } = r
      return Object.keys(rest).length === 0 ? [] : [["Detail", text(rest)]]
    }
  }
}

/** A JSON value in one line, cut at 400 characters. */
const text = (value: unknown): string => {
  const s = JSON.stringify(value) ?? "none"
  return s.length > 400 ? `${s.slice(0, 400)}…` : s
}
