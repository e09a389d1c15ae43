/**
 * A step's end as the journal fixes it (§7.13). A step whose `StepFinished` is journaled asked for
 * exactly what its journal holds: code that asks for something new there, or ends the step before
 * reaching what was journaled, has changed under the run. Both are non-determinism at that step,
 * judged the moment the replay meets them, in every mode.
 *
 * Decision: judged here rather than left to the end of the run, for two reasons. Resume would
 * otherwise perform an effect the changed code added to a step that already finished, writing it
 * into a step the journal had closed; and Strict would report an effect added at a finished step's
 * end as an overrun (more asked than recorded), and a removed one only when the whole run ended,
 * pointing at no step. A step still open in the journal (the run suspended inside it) is not
 * judged: what it asks past its recorded prefix is still to be lived.
 */
import { type Effect, Option } from "effect"
import type * as EffectKey from "../domain/EffectKey.js"
import type { StepId } from "../domain/Ids.js"
import { NonDeterminism } from "../errors/RuntimeError.js"
import * as Execution from "./Execution.js"
import * as Observability from "./Observability.js"
import * as Patches from "./Patches.js"

/**
 * Halts the execution when the journal shows the forward step at `at` finished and the code asks
 * for `offered` there, which the journal does not hold; undefined when the step is still open.
 */
export const askedAfterEnd = (
  exec: Execution.Execution,
  at: Execution.At,
  offered: { readonly key: EffectKey.EffectKey; readonly kind: string },
): Effect.Effect<never> | undefined => {
  if (at.phase !== "forward") return undefined
  const finished = exec.history.finishedAt.get(at.step)
  if (finished === undefined) return undefined
  const divergence = new NonDeterminism({
    run: exec.run,
    seq: finished,
    expected: { key: "none", kind: "StepFinished" },
    offered,
  })
  Observability.divergence()
  return Execution.halt(
    exec,
    Execution.Stop.Quarantine({
      message: `${divergence.message}: the journal shows the step finished without it ${Execution.placeOf(exec, at)}`,
      divergence: Option.some(divergence),
    }),
  )
}

/**
 * The stop for a forward step that ended (its body succeeded) without reaching everything its
 * journal holds: the first announcement or marker answer it skipped; undefined when it reached all.
 */
export const unreached = (exec: Execution.Execution, step: StepId): Execution.Stop | undefined => {
  const skipped = exec.history.visitsByStep.get(step)?.find((v) => exec.history.unvisited.has(v.key))
  if (skipped === undefined) return undefined
  const marker = Patches.unreached(exec, skipped.key)
  const divergence =
    marker ??
    new NonDeterminism({
      run: exec.run,
      seq: skipped.seq,
      expected: { key: skipped.key, kind: skipped.kind },
      offered: { key: "none", kind: "StepFinished" },
    })
  Observability.divergence()
  const place = Execution.placeOf(exec, { step, phase: "forward", case: Option.none() })
  return Execution.Stop.Quarantine({
    message:
      marker === undefined
        ? `the step ended without reaching journaled effect ${skipped.kind} ek:${skipped.key} (seq ${skipped.seq}): it no longer reproduces its journal ${place}`
        : `the step ended without reaching journaled marker ${marker.expected.kind} (seq ${marker.seq}, ek:${skipped.key}): a marker was removed while the run depends on it ${place}`,
    divergence: Option.some(divergence),
  })
}
