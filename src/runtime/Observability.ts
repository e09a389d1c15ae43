/**
 * The runtime's counters (§10) through Effect `Metric`. Every dimension is a fixed enum string or
 * a declared effect kind, never a rendered message. Counters are bumped with `unsafeUpdate`, which
 * records into the default registry synchronously, so the protocol stays free of bookkeeping
 * effects; spans come from `Effect.withSpan` and export through `@effect/opentelemetry`. The
 * structured log lines of runs that need a look are here too.
 */
import { Effect, Metric, MetricLabel, Option } from "effect"

export const runs = Metric.counter("agentplane.runs", { description: "runs concluded, by outcome", incremental: true })
export const effects = Metric.counter("agentplane.effects", { description: "acts performed", incremental: true })
export const effectsReplayed = Metric.counter("agentplane.effects.replayed", {
  description: "effects answered from the journal",
  incremental: true,
})
export const divergences = Metric.counter("agentplane.replay.divergences", { incremental: true })
export const quarantines = Metric.counter("agentplane.quarantines", { incremental: true })
export const undecidables = Metric.counter("agentplane.effects.undecidable", { incremental: true })
export const unreproducible = Metric.counter("agentplane.runs.unreproducible", { incremental: true })
export const reconciles = Metric.counter("agentplane.effects.reconciled", { incremental: true })
export const budgetRefusals = Metric.counter("agentplane.budget.refusals", { incremental: true })
export const compensations = Metric.counter("agentplane.saga.compensations", { incremental: true })
export const unknownVersions = Metric.counter("agentplane.runs.unknown_version", {
  description: "runs left alone because their definition's version is not registered here (§7.13)",
  incremental: true,
})
export const denials = Metric.counter("agentplane.policy.denials", {
  description: "effects and releases policy refused, by action",
  incremental: true,
})

// One label array per set of labels, shared by the counters: each counter finds its registry
// entry by the array's identity (a WeakMap of its own), so a fresh array each bump hashed a new
// key every time. Label values are fixed enums or declared kinds, so the map stays small.
const labelled = new Map<string, ReadonlyArray<MetricLabel.MetricLabel>>()

const bump = (counter: Metric.Metric.Counter<number>, labels: ReadonlyArray<readonly [string, string]> = []) => {
  const key = labels.map(([k, v]) => `${k}=${v}`).join("\u0000")
  let tags = labelled.get(key)
  if (tags === undefined) {
    tags = labels.map(([k, v]) => MetricLabel.make(k, v))
    labelled.set(key, tags)
  }
  counter.unsafeUpdate(1, tags)
}

export const concluded = (outcome: string) => bump(runs, [["outcome", outcome]])
export const performedEffect = (kind: string) => bump(effects, [["kind", kind]])
export const replayedEffect = (kind: string) => bump(effectsReplayed, [["kind", kind]])
export const divergence = () => bump(divergences)
export const quarantined = () => bump(quarantines)
export const undecidable = () => bump(undecidables)
export const notReproduced = () => bump(unreproducible)
export const reconciled = (verdict: string) => bump(reconciles, [["verdict", verdict]])
export const refused = (limit: string) => bump(budgetRefusals, [["limit", limit]])
export const compensated = (outcome: string) => bump(compensations, [["outcome", outcome]])
export const denied = (action: string) => bump(denials, [["action", action]])
export const unknownVersion = () => bump(unknownVersions)

/**
 * One structured line for a run that ended where a person may have to look: failed, compensated,
 * quarantined or exhausted at `warn`, cancelled at `info`; a success logs nothing. The reason is
 * the one `RunSealed` journals and `GET /runs/{run}` shows.
 */
export const logConclusion = (run: string, outcome: string, reason: Option.Option<string>): Effect.Effect<void> => {
  if (outcome === "succeeded" || outcome === "swept") return Effect.void
  const log = outcome === "cancelled" ? Effect.logInfo : Effect.logWarning
  return log("agentplane.run.concluded").pipe(
    Effect.annotateLogs({ run, outcome, reason: Option.getOrElse(reason, () => "") }),
  )
}

/** A run whose owner died, resumed by this instance's recovery pass (§7.10 pass 1). */
export const logRecovered = (run: string, outcome: "resumed" | "failed", detail: string): Effect.Effect<void> =>
  (outcome === "resumed" ? Effect.logInfo : Effect.logWarning)("agentplane.run.recovered").pipe(
    Effect.annotateLogs({ run, outcome, detail }),
  )

/** A run this instance left alone: its definition's version is not the one registered here (§7.13). */
export const logUnknownVersion = (fields: {
  readonly run: string
  readonly name: string
  readonly version: string
  readonly registered: string
}): Effect.Effect<void> => Effect.logWarning("agentplane.run.unknown_version").pipe(Effect.annotateLogs(fields))
