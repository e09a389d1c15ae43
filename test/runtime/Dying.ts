/**
 * A kill switch on the stores of one process, for crash tests: once a chosen store call has
 * returned (its write durable), the process is dead. In-process, every later store call fails
 * with `Backend` and nothing is released, as with `kill -9`; a child process passes `onDeath` to
 * really die right there. No test framework here, so a child process can import it.
 */
import { Context, Effect, Layer, Option } from "effect"
import type { RunId } from "../../src/domain/Ids.js"
import { Backend as BackendError } from "../../src/errors/StoreError.js"
import { BatchStore } from "../../src/services/BatchStore.js"
import { CaseStore } from "../../src/services/CaseStore.js"
import { EventStore } from "../../src/services/EventStore.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import { QuotaStore } from "../../src/services/QuotaStore.js"
import type * as Stores from "../../src/services/Stores.js"
import { TaskStore } from "../../src/services/TaskStore.js"
import { TimerStore } from "../../src/services/TimerStore.js"

/** Where the process dies: right after the `nth` (from 1) call of `store.method` that `when` accepts returned. */
export interface Boundary {
  readonly store: string
  readonly method: string
  readonly when?: (args: ReadonlyArray<unknown>) => boolean
  readonly nth?: number
}

/**
 * The stores as one process sees them, with a kill switch: once the boundary call has returned,
 * the process is dead and every later call fails with `Backend`, so it writes and releases
 * nothing more (its lease lapses, its quota slot and timer claim stay taken). The run the first
 * `acquire` or opening `append` named is kept, so a test learns the run of an admission that
 * never answered.
 */
export const dying = (base: Layer.Layer<Stores.Stores, BackendError>, onDeath: () => void = () => {}) => {
  let boundary: Option.Option<Boundary> = Option.none()
  let seen = 0
  let dead = false
  let firstRun: Option.Option<RunId> = Option.none()
  const tags = { CaseStore, EventStore, TimerStore, TaskStore, BatchStore, QuotaStore, JournalStore } as const
  const wrap = (store: string, service: object): object =>
    new Proxy(service, {
      get: (target, method: string) => {
        const original = (target as Record<string, unknown>)[method]
        if (typeof original !== "function") return original
        return (...args: Array<unknown>) => {
          const effect = (original as (...a: Array<unknown>) => unknown).apply(target, args)
          if (!Effect.isEffect(effect)) return effect
          return Effect.suspend(() => {
            if (dead) return Effect.fail(new BackendError({ detail: "injected: the process is dead" }))
            const opens =
              method === "acquire" || (method === "append" && args[4] !== undefined && "open" in (args[4] as object))
            if (store === "JournalStore" && opens && Option.isNone(firstRun)) {
              firstRun = Option.some(args[0] as RunId)
            }
            const b = Option.getOrUndefined(boundary)
            const hit = b !== undefined && b.store === store && b.method === method && (b.when?.(args) ?? true)
            return hit
              ? Effect.tap(effect, () =>
                  Effect.sync(() => {
                    seen += 1
                    if (seen === (b.nth ?? 1)) {
                      dead = true
                      onDeath()
                    }
                  }),
                )
              : effect
          })
        }
      },
    })
  const stores = Layer.map(base, (context) => {
    let out = context
    for (const [name, tag] of Object.entries(tags)) {
      out = Context.add(out, tag as never, wrap(name, Context.get(context, tag as never)) as never)
    }
    return out
  })
  return {
    stores,
    arm: (b: Boundary) => {
      boundary = Option.some(b)
    },
    dead: () => dead,
    firstRun: () => firstRun,
  }
}

/** The boundary right after any call of `store.method`. */
export const call = (store: string, method: string): Boundary => ({ store, method })
