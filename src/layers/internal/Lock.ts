/**
 * The SQLite connection's one lock. A store transaction takes and gives it back in a plain step
 * when nobody holds it, which is nearly always: an Effect `Semaphore` answered every take through
 * `asyncInterrupt` and every release through a scheduled task, about 4.5 µs a transaction against
 * a BEGIN … COMMIT of 7 µs.
 *
 * The holder is not recorded: a lock is held by whoever took it until they release it, as a
 * semaphore of one permit is. A waiter is woken, not handed the lock: every release wakes every
 * waiter and each takes it again on its own fiber, so a waiter interrupted after its wake-up
 * leaves the lock free for the rest instead of holding it for nobody (the same rule `Semaphore`
 * follows).
 */
import { Effect } from "effect"

export interface Lock {
  /** True from a take until its release. */
  readonly held: () => boolean
  /**
   * Takes the lock, waiting while another holds it; call inside `uninterruptibleMask`, with its
   * `restore`, so only the wait can be interrupted and a take is always paired with a release.
   */
  readonly take: (restore: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>) => Effect.Effect<void>
  /** Takes the lock if it is free, at once; false (and nothing taken) if another holds it. */
  readonly tryTake: () => boolean
  /** Gives the lock back and wakes every waiter. */
  readonly release: () => void
}

export const make = (): Lock => {
  let held = false
  const waiters = new Set<() => void>()

  const wake = Effect.async<void>((resume) => {
    const waiter = () => resume(Effect.void)
    // Checked again here: the fiber may have yielded between its look and this registration,
    // and a release in between woke nobody.
    if (!held) return waiter()
    waiters.add(waiter)
    return Effect.sync(() => {
      waiters.delete(waiter)
    })
  })

  const take: Lock["take"] = (restore) => {
    const attempt: Effect.Effect<void> = Effect.suspend(() => {
      if (!held) {
        held = true
        return Effect.void
      }
      return Effect.zipRight(restore(wake), attempt)
    })
    return attempt
  }

  return {
    held: () => held,
    take,
    tryTake: () => {
      if (held) return false
      held = true
      return true
    },
    release: () => {
      held = false
      if (waiters.size === 0) return
      const woken = [...waiters]
      waiters.clear()
      for (const waiter of woken) waiter()
    },
  }
}
