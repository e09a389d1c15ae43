/**
 * The log store's refusals, in the order both implementations check them, so memory and SQL
 * answer a bad request with the same error: a run first (is it sealed, is it integrated), then
 * the size asked for.
 */
import { Either } from "effect"
import type { RunId } from "../../domain/Ids.js"
import { RunNotIntegrated, RunOutsideSize, SizeBeyondLog, SizesUnordered } from "../../errors/LogError.js"

const isCount = (n: number): boolean => Number.isSafeInteger(n) && n >= 0

/** Whether the run at `position` has a proof in the tree of `size`, the log having integrated `latest`. */
export const inclusion = (
  run: RunId,
  position: number,
  size: number,
  latest: number,
): Either.Either<void, RunNotIntegrated | SizeBeyondLog | RunOutsideSize> => {
  if (position >= latest) return Either.left(new RunNotIntegrated({ run, position, size: latest }))
  if (!isCount(size) || size > latest) return Either.left(new SizeBeyondLog({ size, latest }))
  if (size <= position) return Either.left(new RunOutsideSize({ run, position, size }))
  return Either.void
}

/** Whether a consistency proof from `from` to `to` can be made (from 0 it is empty), the log having integrated `latest`. */
export const consistency = (
  from: number,
  to: number,
  latest: number,
): Either.Either<void, SizesUnordered | SizeBeyondLog> => {
  if (!isCount(from) || !isCount(to) || from > to) return Either.left(new SizesUnordered({ from, to }))
  if (to > latest) return Either.left(new SizeBeyondLog({ size: to, latest }))
  return Either.void
}
