/**
 * What the runtime answers about a run: an execution's result, a Strict replay's report, a test
 * crash and a delivery's effect. Apart from `Runtime` so the engine that builds them and the
 * service that exposes them do not import each other.
 */
import { Data, type Option } from "effect"
import type { CaseId, RunId } from "../domain/Ids.js"
import type * as Journal from "../domain/Journal.js"
import type * as Run from "../domain/Run.js"
import type { NonDeterminism } from "../errors/RuntimeError.js"
import type { CrashPoint } from "./Execution.js"

/** What an execution of a run came to. */
export interface RunResult<O> {
  readonly run: RunId
  readonly case: Option.Option<CaseId>
  readonly status: Run.RunStatus
  /** The output, when the run succeeded. */
  readonly output: Option.Option<O>
}

/** What a Strict replay found (§7.2); it wrote nothing. */
export interface ReplayReport {
  readonly run: RunId
  /** The definition reproduces the journal: every key matched and the run concludes as journaled. */
  readonly reproduced: boolean
  readonly status: Run.RunStatus
  readonly divergence: Option.Option<NonDeterminism>
  /** The journal's latest conclusion, if it has one. */
  readonly journaled: Option.Option<Journal.RunOutcome>
}

/** A test crash (`Options.crash`): the execution stopped at `point` as if its process died; nothing was cleaned up. */
export class Crashed extends Data.TaggedError("Crashed")<{ readonly run: RunId; readonly point: CrashPoint }> {}

/** What a delivery did (§7.9): it resumed a run, it waits in the buffer, or its (source, id) was known. */
export type Delivered = Data.TaggedEnum<{
  Resumed: { readonly run: RunId }
  Buffered: Record<never, never>
  Duplicate: Record<never, never>
}>
export const Delivered = Data.taggedEnum<Delivered>()
