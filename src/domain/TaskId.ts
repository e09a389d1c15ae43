/**
 * Task ids are derived, not minted, so a resumed run addresses the task it opened before.
 */
import { createHash } from "node:crypto"
import { Either, Schema } from "effect"
import { InvalidId } from "../errors/IdError.js"
import type { EffectKey } from "./EffectKey.js"
import type { RunId } from "./Ids.js"

/** 64 lowercase hex digits; shown `task_<hex>`. */
export const TaskId = Schema.String.pipe(
  Schema.pattern(/^[0-9a-f]{64}$/, { message: () => "expected 64 lowercase hex digits" }),
  Schema.brand("TaskId"),
)
export type TaskId = typeof TaskId.Type

/** SHA-256(run's shown id ‖ effect key hex): the run is mixed in so two runs of one plan never share a task. */
export const derive = (run: RunId, effect: EffectKey): TaskId =>
  TaskId.make(createHash("sha256").update(run, "utf8").update(effect, "utf8").digest("hex"))

/** Accepts the hex or `task_<hex>`. */
export const parse = (input: string): Either.Either<TaskId, InvalidId> => {
  const hex = input.startsWith("task_") ? input.slice(5) : input
  return /^[0-9a-f]{64}$/.test(hex)
    ? Either.right(TaskId.make(hex))
    : Either.left(new InvalidId({ kind: "TaskId", input, detail: "expected task_<64 lowercase hex> or the hex alone" }))
}

export const show = (id: TaskId): string => `task_${id}`
