/**
 * A refusal as the API stated it: the status, the error's tag and its words. The store's claim
 * errors carry fields, not a message, so their sentence is written here from those fields.
 */
import type { Answer } from "./Api.js"
import { h } from "./Dom.js"

export const text = (answer: Answer): string => {
  const body = (answer.body ?? {}) as Record<string, unknown>
  const tag = typeof body._tag === "string" ? body._tag : "Error"
  const quoted = (v: unknown) => JSON.stringify(v)
  const words =
    typeof body.message === "string"
      ? body.message
      : tag === "Excluded"
        ? `${quoted(body.actor)} may not decide this task (four-eyes rule)`
        : tag === "WrongRole"
          ? `${quoted(body.actor)} holds none of this task's candidate roles`
          : tag === "AlreadyClaimed"
            ? `the task is claimed by ${quoted(body.holder)}`
            : tag === "NotPending"
              ? `the task is ${String(body.state)}, no longer pending`
              : tag === "NotHeld"
                ? `the task is not held by ${quoted(body.actor)}`
                : tag === "TaskNotFound" || tag === "NotFound"
                  ? "not found in this credential's tenant"
                  : JSON.stringify(body)
  return `${answer.status} ${tag}: ${words}`
}

/** The refusal as an alert, read out when it appears; a 401 says the way out: another token. */
export const view = (answer: Answer, lead?: string): HTMLElement =>
  h(
    "p",
    { class: "refusal", role: "alert" },
    lead === undefined ? "" : `${lead} `,
    text(answer),
    answer.status === 401 ? ". This server does not know the token: sign out and sign in with another." : "",
  )
