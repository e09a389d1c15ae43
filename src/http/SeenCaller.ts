/**
 * The request's caller as the request log sees it: the `Authentication` middleware records the
 * caller it established, and the log line written after the response reads it back. Its own
 * module because the log wraps the whole API while authentication sits inside it.
 */
import { Context, Effect, Option, Ref } from "effect"
import type { Caller } from "./Caller.js"

/** The cell the request log provides for one request; absent outside a logged request. */
export class SeenCaller extends Context.Tag("agentplane/http/SeenCaller")<
  SeenCaller,
  Ref.Ref<Option.Option<Caller>>
>() {}

/** Records `caller` as the request's caller, when a request log is listening; otherwise does nothing. */
export const seen = (caller: Caller): Effect.Effect<void> =>
  Effect.flatMap(Effect.serviceOption(SeenCaller), (cell) =>
    Option.match(cell, { onNone: () => Effect.void, onSome: (ref) => Ref.set(ref, Option.some(caller)) }),
  )
