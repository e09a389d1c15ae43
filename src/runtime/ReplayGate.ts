/**
 * The replay gate (§7.13): every run of an export replayed Strict against the definitions of the
 * build under test, each given one verdict, so a changed definition meets its old runs in CI rather
 * than in production. The records come from the file and are handed to the runtime as they are
 * (`Runtime.replayRecords`): nothing is written to any store, and Strict replay performs no act and
 * asks no policy, so no model, tool or server is called. One run is held at a time.
 *
 * Decisions:
 * - A verdict is the report's JSON object itself (snake_case, absences `null`), so the library, the
 *   `--report` file and a project's own test read the same thing.
 * - An unfinished run (no conclusion journaled) whose code asks past its recorded end is `ok-open`:
 *   its prefix matched and the rest is still to be lived. A concluded run that does so is `overrun`.
 * - A concluded run that replays without diverging but ends otherwise than journaled (it succeeds
 *   where the journal failed, say) is `nondeterministic` with no point: what differs is the ending.
 * - A journaled input the definition no longer decodes is `nondeterministic` too: the code changed
 *   in a way the run cannot meet.
 * - A run admitted under a version the build does not register is `unknown-definition`: the build
 *   would leave it alone, not resume it (an old journal without a version is of the default one).
 * - The exit code: 2 outranks 3 (a definite finding is what a gate must show first; both fail the
 *   build), and a check that gave no verdict at all is 1: a gate that checked nothing proves nothing
 *   (a filter that matched no run, an export without runs).
 */
import { Effect, Layer, Option, type Stream } from "effect"
import * as ExportRuns from "../archive/ExportRuns.js"
import * as Calendar from "../domain/Calendar.js"
import type { RunId } from "../domain/Ids.js"
import type * as Journal from "../domain/Journal.js"
import type * as Run from "../domain/Run.js"
import { Tenant, type TenantId } from "../domain/Tenant.js"
import * as Sealed from "../erasure/Sealed.js"
import type { NonDeterminism } from "../errors/RuntimeError.js"
import type { Backend, Corrupt } from "../errors/StoreError.js"
import * as PolicyEngine from "../services/PolicyEngine.js"
import type * as Stores from "../services/Stores.js"
import * as RunDefinition from "./RunDefinition.js"
import type { Crashed } from "./RunResult.js"
import * as RuntimeModule from "./Runtime.js"

const { Runtime } = RuntimeModule

/** Where a replay first asked for something other than the journal holds. */
export interface Point {
  /** The record's position in the run (its seq), and its step, phase and effect ordinal when it has them. */
  readonly seq: number
  readonly step: number | null
  readonly phase: string | null
  readonly ordinal: number | null
  readonly effect_key: string | null
  readonly recorded: { readonly kind: string; readonly key: string }
  readonly asked: { readonly kind: string; readonly key: string }
  /** Where the asked arguments first differ from the recorded ones, when the kinds agree. */
  readonly diff: string | null
}

export type Verdict =
  | { readonly verdict: "ok" | "ok-open"; readonly run: string; readonly definition: string }
  | {
      readonly verdict: "nondeterministic"
      readonly run: string
      readonly definition: string
      readonly at: Point | null
      readonly detail: string
    }
  | { readonly verdict: "overrun"; readonly run: string; readonly definition: string; readonly seq: number }
  | {
      readonly verdict: "unknown-definition"
      readonly run: string
      readonly definition: string
      /** The version the run was admitted under, and the one this build registers (null: none). */
      readonly version: string
      readonly registered: string | null
    }
  | { readonly verdict: "unreadable"; readonly run: string | null; readonly line: number; readonly detail: string }

export type VerdictName = Verdict["verdict"]

/** The counts of a check, and what made the input incomplete; `exit` is the code §7.13 gives. */
export interface Summary {
  readonly checked: number
  readonly ok: number
  readonly ok_open: number
  readonly nondeterministic: number
  readonly overrun: number
  readonly unknown_definition: number
  readonly unreadable: number
  /** Runs the filters left out. */
  readonly skipped: number
  readonly incomplete: string | null
  readonly exit: 0 | 1 | 2 | 3
}

export interface Filter {
  /** Only these runs. */
  readonly runs?: ReadonlySet<string>
  /** Only runs of this definition (its capability). */
  readonly definition?: string
  /** Only runs admitted at or after this instant (epoch seconds). */
  readonly since?: number
}

export interface Options<E = never, R = never> {
  readonly filter?: Filter
  /** Hears every verdict as it is reached (the CLI writes its report line here). */
  readonly onVerdict?: (verdict: Verdict) => Effect.Effect<void, E, R>
  /**
   * Opens each run's sealed payloads before it is replayed (`SealedStores.openRecords` over the
   * store's key ring); a payload it cannot open (an erased case's) makes the run `unreadable`.
   * Absent, a run whose payloads are sealed is `unreadable`, saying so: replaying ciphertext would
   * report every sealed run as changed code.
   */
  readonly open?: (
    records: ReadonlyArray<Journal.Record>,
  ) => Effect.Effect<ReadonlyArray<Journal.Record>, Corrupt | Backend, Tenant>
  /** Hears the running count of records read, after each run (progress). */
  readonly onRecords?: (records: number) => Effect.Effect<void, E, R>
}

/** A check could not be made at all (the runtime failed under it); not a verdict on any run. */
export type Unchecked = Backend | Corrupt | Crashed

/**
 * Replays every run of the export `lines` against the registered definitions and answers the
 * summary; each verdict goes to `onVerdict`. Needs a runtime whose registry holds the build's
 * definitions (`layer`).
 */
export const check = <E1, R1, E = never, R = never>(
  lines: Stream.Stream<string, E1, R1>,
  options: Options<E, R> = {},
): Effect.Effect<Summary, E1 | E | Unchecked, R1 | R | RuntimeModule.Runtime | RunDefinition.Registry> =>
  Effect.gen(function* () {
    const runtime = yield* Runtime
    const registry = yield* RunDefinition.Registry
    const filter = options.filter ?? {}
    const counts: Record<VerdictName, number> = {
      ok: 0,
      "ok-open": 0,
      nondeterministic: 0,
      overrun: 0,
      "unknown-definition": 0,
      unreadable: 0,
    }
    let skipped = 0
    let records = 0
    let tenant: Option.Option<TenantId> = Option.none()
    const hear = (v: Verdict) =>
      Effect.suspend(() => {
        counts[v.verdict] += 1
        return options.onVerdict?.(v) ?? Effect.void
      })
    const wants = (run: RunId) => {
      const wanted = filter.runs === undefined || filter.runs.has(run)
      if (!wanted) skipped += 1
      return wanted
    }
    const each = (item: ExportRuns.Item) =>
      Effect.gen(function* () {
        switch (item._tag) {
          case "Header":
            tenant = Option.some(item.tenant)
            return
          case "Damaged":
            return yield* hear({
              verdict: "unreadable",
              run: Option.getOrNull(item.run),
              line: item.line,
              detail: item.detail,
            })
        }
        records += item.records.length
        const admitted = admissionOf(item.records)
        // The header precedes every record line, so a run always has its tenant.
        if (Option.isNone(admitted) || Option.isNone(tenant)) {
          return yield* hear({
            verdict: "unreadable",
            run: item.run,
            line: item.line,
            detail: "the run has no admission",
          })
        }
        if (!admits(filter, admitted.value)) {
          skipped += 1
          return
        }
        const unreadable = (detail: string) => hear({ verdict: "unreadable", run: item.run, line: item.line, detail })
        let toReplay = item.records
        if (options.open !== undefined) {
          const opened = yield* Effect.either(
            options.open(item.records).pipe(Effect.provideService(Tenant, tenant.value)),
          )
          if (opened._tag === "Left") {
            const e = opened.left
            if (e._tag === "Corrupt") return yield* unreadable(`its sealed payloads do not open: ${e.message}`)
            return yield* Effect.fail(e)
          }
          toReplay = opened.right
        } else if (sealed(admitted.value.kind.input)) {
          return yield* unreadable(
            "its payloads are sealed: give the store whose key ring sealed them (replay --store, and its KEK)",
          )
        }
        const verdict = yield* judge(runtime, registry, item.run, toReplay, admitted.value.kind).pipe(
          Effect.provideService(Tenant, tenant.value),
        )
        yield* hear(verdict)
        if (options.onRecords !== undefined) yield* options.onRecords(records)
      })
    const read = yield* ExportRuns.read(lines, each, wants)
    const checked = Object.values(counts).reduce((a, b) => a + b, 0)
    const incomplete = Option.getOrNull(read.incomplete)
    return {
      checked,
      ok: counts.ok,
      ok_open: counts["ok-open"],
      nondeterministic: counts.nondeterministic,
      overrun: counts.overrun,
      unknown_definition: counts["unknown-definition"],
      unreadable: counts.unreadable,
      skipped,
      incomplete,
      exit: exitOf(counts, checked, incomplete),
    } satisfies Summary
  })

/**
 * A runtime for `check` over `stores` (a memory backend: `check` writes nothing to it), the
 * wall-clock calendar and `register`'s definitions. Policy denies everything, and Strict replay
 * never asks it: a replay that did would die, not decide.
 */
export const layerWith = (
  register: Layer.Layer<never, never, RunDefinition.Registry>,
  stores: Layer.Layer<Stores.Stores>,
): Layer.Layer<RuntimeModule.Runtime | RunDefinition.Registry> =>
  Layer.merge(RuntimeModule.layer(), register).pipe(
    Layer.provide(PolicyEngine.denyAll),
    Layer.provideMerge(Layer.mergeAll(RunDefinition.layerRegistry, Calendar.layerWallClock, stores)),
  )

// internal

type Admitted = Extract<Journal.Kind, { kind: "RunAdmitted" }>

/** The run's admission, and when it was admitted (epoch seconds, from its frozen plan; 0 if absent). */
const admissionOf = (
  records: ReadonlyArray<Journal.Record>,
): Option.Option<{ readonly kind: Admitted; readonly at: number }> => {
  const first = records[0]?.kind
  if (first?.kind !== "RunAdmitted") return Option.none()
  const frozen = records[1]?.kind
  const plan = frozen?.kind === "PlanFrozen" ? (frozen.plan as { readonly admitted_at?: unknown } | null) : null
  return Option.some({ kind: first, at: typeof plan?.admitted_at === "number" ? plan.admitted_at : 0 })
}

const sealed = (value: unknown): boolean => typeof value === "string" && value.startsWith(Sealed.PREFIX)

const admits = (filter: Filter, admitted: { readonly kind: Admitted; readonly at: number }): boolean =>
  (filter.definition === undefined || filter.definition === admitted.kind.capability) &&
  (filter.since === undefined || admitted.at >= filter.since)

const judge = (
  runtime: RuntimeModule.Runtime["Type"],
  registry: RunDefinition.Registry["Type"],
  run: RunId,
  records: ReadonlyArray<Journal.Record>,
  admitted: Admitted,
) =>
  Effect.gen(function* () {
    const definition = admitted.capability
    // An instance resumes only the versions it registers (§7.13): a run of another version is
    // this build's to leave alone, so replaying it here would judge code that never meets it.
    const version = admitted.definition_version ?? RunDefinition.DEFAULT_VERSION
    const entry = yield* registry.lookup(definition)
    if (Option.isNone(entry) || entry.value.definition.version !== version) {
      const registered = Option.isNone(entry) ? null : entry.value.definition.version
      return { verdict: "unknown-definition", run, definition, version, registered } satisfies Verdict
    }
    const concluded = records.some((r) => r.kind.kind === "RunSealed")
    const replayed = yield* Effect.either(runtime.replayRecords(run, records))
    if (replayed._tag === "Left") {
      const e = replayed.left
      switch (e._tag) {
        case "ReplayOverrun":
          return concluded
            ? ({ verdict: "overrun", run, definition, seq: e.seq } satisfies Verdict)
            : ({ verdict: "ok-open", run, definition } satisfies Verdict)
        case "PlanContract":
          return { verdict: "nondeterministic", run, definition, at: null, detail: e.detail } satisfies Verdict
        default:
          return yield* Effect.fail(e)
      }
    }
    const report = replayed.right
    if (Option.isSome(report.divergence)) {
      const d = report.divergence.value
      return {
        verdict: "nondeterministic",
        run,
        definition,
        at: pointOf(d, records),
        detail: d.message,
      } satisfies Verdict
    }
    if (report.reproduced) return { verdict: "ok", run, definition } satisfies Verdict
    if (Option.isNone(report.journaled)) return { verdict: "ok-open", run, definition } satisfies Verdict
    return {
      verdict: "nondeterministic",
      run,
      definition,
      at: null,
      detail: `the definition ends ${report.status._tag}${statusDetail(report.status)} where the journal concludes ${report.journaled.value}`,
    } satisfies Verdict
  })

/** What a status says beyond its name, as `(…)`, or nothing. */
const statusDetail = (status: Run.RunStatus): string => {
  const message = "message" in status ? status.message : undefined
  return message === undefined ? "" : ` (${message})`
}

const pointOf = (d: NonDeterminism, records: ReadonlyArray<Journal.Record>): Point => {
  const at = records[d.seq - 1]
  const descriptor =
    at?.kind.kind === "EffectStarted" ? (at.kind.descriptor as { readonly ordinal?: unknown } | null) : null
  return {
    seq: d.seq,
    step: at?.step ?? null,
    phase: at?.phase ?? null,
    ordinal: typeof descriptor?.ordinal === "number" ? descriptor.ordinal : null,
    effect_key: at === undefined ? null : Option.getOrNull(at.effectKey),
    recorded: d.expected,
    asked: d.offered,
    diff: d.diff ?? null,
  }
}

const exitOf = (counts: Record<VerdictName, number>, checked: number, incomplete: string | null): Summary["exit"] => {
  if (counts.nondeterministic + counts.overrun + counts["unknown-definition"] > 0) return 2
  if (counts.unreadable > 0 || incomplete !== null) return 3
  if (checked === 0) return 1
  return 0
}
