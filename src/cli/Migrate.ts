/**
 * `agentplane migrate`: applies the dialect's pending migrations and exits (§8.3). Every verb that
 * opens a store migrates anyway; this one lets a deploy do it as a step of its own.
 */
import { Command } from "@effect/cli"
import { Console, Effect, Layer } from "effect"
import * as Store from "./Store.js"

export const command = Command.make(
  "migrate",
  { store: Store.option, timeouts: Store.timeoutOptions },
  ({ store, timeouts }) =>
    Effect.zipRight(
      Layer.build(Store.layer(store, timeouts)).pipe(Effect.scoped),
      Console.log(`migrations applied to ${Store.show(store)}`),
    ),
).pipe(Command.withDescription("apply pending migrations to the store and exit"))
