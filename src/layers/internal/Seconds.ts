/**
 * A timeout from the environment, in whole seconds like its flag (`--lock-timeout 5` and
 * `AGENTPLANE_PG_LOCK_TIMEOUT=5`): one syntax for both, and a value that is not one is refused
 * naming the variable, where an Effect duration's parse said only `Expected a duration`.
 */
import { Config, Duration, Effect, Option } from "effect"
import { Backend } from "../../errors/StoreError.js"

/** `variable` as whole seconds (at least 1), absent when unset; anything else is `Backend` naming it. */
export const fromEnv = (variable: string): Effect.Effect<Option.Option<Duration.Duration>, Backend> =>
  Effect.gen(function* () {
    const text = yield* Config.option(Config.string(variable)).pipe(
      Effect.mapError((e) => new Backend({ detail: `backend: configuration: ${variable}: ${e.message}` })),
    )
    if (Option.isNone(text)) return Option.none()
    const value = text.value.trim()
    // At least 1: on PostgreSQL a timeout of 0 means none at all, which would fail open.
    if (!/^[0-9]+$/.test(value) || Number(value) < 1) {
      return yield* new Backend({
        detail: `backend: configuration: ${variable}=${JSON.stringify(text.value)} is not a timeout: give a whole number of seconds, at least 1 (e.g. ${variable}=30)`,
      })
    }
    return Option.some(Duration.seconds(Number(value)))
  })
