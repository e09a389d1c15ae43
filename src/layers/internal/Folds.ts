/**
 * The writes one SQL store lets another fold into its own statement (`JournalStore.Form`): the
 * store that owns the table names the rows, and a journal store over the same database writes
 * them in its statement instead of running the alongside.
 */
import type { EffectKey } from "../../domain/EffectKey.js"
import type { RunId } from "../../domain/Ids.js"

/** A timer to drop (`TimerStore.disarm`), on `database`, for the tenant of the statement it joins. */
export interface TimerDrop {
  readonly _tag: "TimerDrop"
  readonly database: object
  readonly run: RunId
  readonly effect: EffectKey
}

export const timerDrop = (database: object, run: RunId, effect: EffectKey): TimerDrop => ({
  _tag: "TimerDrop",
  database,
  run,
  effect,
})

/** `form` as a timer drop on `database`, else undefined: a form of another store or database is never folded. */
export const asTimerDrop = (form: unknown, database: object): TimerDrop | undefined =>
  typeof form === "object" &&
  form !== null &&
  (form as { readonly _tag?: unknown })._tag === "TimerDrop" &&
  (form as TimerDrop).database === database
    ? (form as TimerDrop)
    : undefined
