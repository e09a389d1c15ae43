/**
 * Versioning markers (§7.13): `cx.patched(id)` lets a changed definition meet the runs its old
 * code started, and `cx.deprecatePatch(id)` retires the old path once none of them is left.
 *
 * A marker takes no ordinal. It sits *between* two calls of its step, before the ordinal the next
 * call will take (its place), so adding one to a definition moves no effect key of the runs that
 * code already wrote: an old run still finds every journaled effect where it left it.
 *
 * The answer is decided once and journaled (`Patched{id, value}`, keyed by its place and id), and
 * every later execution reads it back, Strict and Resume alike, so it never changes under a run.
 * Deciding it: the run takes the new path (true) unless its journal shows it already went past
 * this place on the old one (false): an effect announced at or after the place in this step, or
 * the step's end. A run whose history ends before the place (one suspended or crashed earlier in
 * the step) takes the new path. Only announcements and a step's end count; an unkeyed record
 * (a note) carries no ordinal, so it cannot say on which side of a marker it was written.
 */
import { Effect, Option } from "effect"
import * as EffectKey from "../domain/EffectKey.js"
import * as Journal from "../domain/Journal.js"
import { NonDeterminism } from "../errors/RuntimeError.js"
import * as Execution from "./Execution.js"
import * as History from "./History.js"
import * as Observability from "./Observability.js"

/** The kind a marker's key is derived under: no effect kind may take it (`agentplane.` is the runtime's). */
export const KIND = "agentplane.patched"

/** The key of marker `id` at `place` (the ordinal the step's next call takes) of the step at `at`. */
export const keyOf = (at: Execution.At, place: number, id: string): EffectKey.EffectKey =>
  EffectKey.derive({ step: at.step, phase: at.phase, ordinal: place, attempt: 1, kind: KIND, args: { id } })

/**
 * Whether the journal shows the step at `at` went past `place` before this execution: an
 * announcement at or after it, or the step's end (its `StepFinished`, or its `StepCompensated`
 * in the unwind).
 */
export const passed = (history: History.History, at: Execution.At, place: number): boolean => {
  if ((history.furthest.get(History.stepOf(at.phase, at.step)) ?? -1) >= place) return true
  const end = at.phase === "forward" ? "StepFinished" : "StepCompensated"
  return (history.positional.get(History.positionOf(at.step, at.phase, end))?.length ?? 0) > 0
}

/** `cx.patched(id)` at `place`: the journaled answer, else decided now and journaled (Strict writes nothing). */
export const patched = (
  exec: Execution.Execution,
  at: Execution.At,
  place: number,
  id: string,
): Effect.Effect<boolean> =>
  Effect.sync(() => {
    const key = keyOf(at, place, id)
    const given = exec.patches.get(key)
    if (given !== undefined) return given
    const journaled = exec.history.patched.get(key)
    if (journaled !== undefined) {
      exec.history.unvisited.delete(key)
      exec.patches.set(key, journaled.value)
      return journaled.value
    }
    const value = !passed(exec.history, at, place)
    exec.patches.set(key, value)
    // Keyed, so it always goes; staged, so it rides with the next commit, before any later act.
    exec.writer.stage(
      Journal.built({
        case: at.case,
        step: at.step,
        phase: at.phase,
        effectKey: Option.some(key),
        kind: { kind: "Patched", id, value },
      }),
    )
    return value
  })

/**
 * `cx.deprecatePatch(id)` at `place`: the old path of marker `id` is gone from the definition.
 * Records nothing. A run whose journal took the old path there (`Patched{id, false}`) cannot go
 * on under this code: it diverged, and is quarantined as non-determinism. One that took the new
 * path reads its answer back (the record is reached); one with no answer there passes.
 */
export const deprecate = (
  exec: Execution.Execution,
  at: Execution.At,
  place: number,
  id: string,
): Effect.Effect<void> =>
  Effect.suspend(() => {
    const key = keyOf(at, place, id)
    const journaled = exec.history.patched.get(key)
    if (journaled === undefined) return Effect.void
    if (journaled.value) {
      exec.history.unvisited.delete(key)
      return Effect.void
    }
    const divergence = new NonDeterminism({
      run: exec.run,
      seq: journaled.seq,
      expected: { key, kind: describe(journaled) },
      offered: { key, kind: `deprecatePatch(${id})` },
    })
    Observability.divergence()
    return Execution.halt(
      exec,
      Execution.Stop.Quarantine({
        message: `${divergence.message}: the run took the old path of marker ${JSON.stringify(id)}, which the definition no longer has ${Execution.placeOf(exec, at)}`,
        divergence: Option.some(divergence),
      }),
    )
  })

/**
 * A journaled answer no execution read back, found once the definition finished (`Driver`): the
 * marker was removed, or moved, while the run depended on it (§7.13). Undefined for an effect.
 */
export const unreached = (exec: Execution.Execution, key: EffectKey.EffectKey): NonDeterminism | undefined => {
  const marker = exec.history.patched.get(key)
  if (marker === undefined) return undefined
  return new NonDeterminism({
    run: exec.run,
    seq: marker.seq,
    expected: { key, kind: describe(marker) },
    offered: { key: "none", kind: "no marker" },
  })
}

// internal

const describe = (marker: History.Marker): string => `Patched{${marker.id}, ${marker.value}}`
