/**
 * An execution's meters (§7.3): effects and spend counted in the forward phase, and the check that
 * refuses the next forward operation once a ceiling is reached (the run pauses as Exhausted).
 */
import { Effect, Option } from "effect"
import * as Quota from "../domain/Quota.js"
import * as Run from "../domain/Run.js"
import type * as EffectKindM from "./EffectKind.js"
import * as Execution from "./Execution.js"

type Exec = Execution.Execution

/** The forward phase meters effects and spend; compensation is exempt from the budget (§7.3). */
export const count = (exec: Exec, at: Execution.At, kind: EffectKindM.Any): void => {
  if (at.phase !== "forward") return
  exec.usage.effects += 1
  if (kind.mutates) exec.mutated.add(at.step)
}

export const meter = (exec: Exec, at: Execution.At, spend: Quota.Spend, live: boolean): void => {
  if (live) exec.liveSpend = Quota.add(exec.liveSpend, spend)
  if (at.phase !== "forward") return
  exec.usage.tokens = Math.min(Number.MAX_SAFE_INTEGER, exec.usage.tokens + spend.tokens)
  exec.usage.minorUnits = Math.min(Number.MAX_SAFE_INTEGER, exec.usage.minorUnits + spend.minorUnits)
}

/**
 * Refuses the next forward operation once a ceiling is reached; the run pauses as Exhausted.
 * `starting`: a step boundary asks before its step is counted; an effect's own step already is,
 * so only a step beyond the ceiling refuses it (else `maxSteps: n` could not act in step n).
 */
export const checkBudget = (
  exec: Exec,
  at: Execution.At,
  starting: "step" | "effect" = "effect",
  reserve: Quota.Spend = Quota.ZERO,
): Effect.Effect<void> =>
  Effect.gen(function* () {
    if (at.phase !== "forward" || exec.mode === "strict") return
    const now = yield* Effect.clockWith((c) => c.currentTimeMillis)
    const over = Run.exhausted(exec.budget, {
      steps: starting === "step" ? exec.usage.steps : Math.max(0, exec.usage.steps - 1),
      effects: exec.usage.effects,
      tokens: exec.usage.tokens,
      minorUnits: exec.usage.minorUnits,
      wallclockSecs: Math.max(0, Math.floor(now / 1000) - exec.admittedAt),
      records: exec.writer.records(),
    })
    if (Option.isSome(over)) return yield* Execution.halt(exec, Execution.Stop.Exhaust(over.value))
    // A call that declares its most spend (a model call's output bound) is refused when that
    // would pass a ceiling, so the ceiling is not passed by it; without one, one call may pass it.
    const reserved = Run.passedBy(exec.budget, exec.usage, reserve)
    if (Option.isSome(reserved)) return yield* Execution.halt(exec, Execution.Stop.Exhaust(reserved.value))
  })
