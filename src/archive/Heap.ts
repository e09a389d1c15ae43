/**
 * Keeping a long archive verb's resident memory flat under Node's default flags. The verbs hold
 * one page at a time, so what survives is garbage, but V8 lets its old generation grow to a
 * multiple of the live heap before it collects it: a 30 MB live heap exported 100,000 records at
 * 300+ MB resident (issue 18), under `--max-old-space-size=96` at 170 MB. An operator runs
 * `agentplane export` with no flags, so the verb asks for a full collection itself every
 * `EVERY` records: at ~30 MB live one takes a few tens of milliseconds, well under 1% of the
 * time those records take.
 *
 * Decision: the collector is reached with `--expose-gc` set at run time and `gc` taken from a
 * fresh context (the one way Node offers without a flag); where that is refused, `collect` does
 * nothing and memory is only what V8 makes of it.
 */
import { setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"

/** Records between two full collections. */
export const EVERY = 25_000

const gc: (() => void) | undefined = (() => {
  try {
    setFlagsFromString("--expose-gc")
    const found: unknown = runInNewContext("gc")
    return typeof found === "function" ? (found as () => void) : undefined
  } catch {
    return undefined
  }
})()

/** A counter that collects once per `every` records it hears. */
export const collector = (every = EVERY) => {
  let since = 0
  return (records: number): void => {
    since += records
    if (since < every) return
    since = 0
    gc?.()
  }
}
