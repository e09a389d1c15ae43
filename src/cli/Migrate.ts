/**
 * `agentplane migrate`: applies the dialect's pending migrations and exits (§8.3). Every verb that
 * opens a store migrates anyway; this one lets a deploy do it as a step of its own. It prints one
 * JSON line saying how many it applied, so a deploy log tells a migrating release from one that
 * had nothing to do.
 */
import { Command } from "@effect/cli"
import { Console, Effect } from "effect"
import * as Migrations from "../layers/Migrations.js"
import * as Store from "./Store.js"

export const command = Command.make(
  "migrate",
  { store: Store.option, timeouts: Store.timeoutOptions },
  ({ store, timeouts }) =>
    Effect.gen(function* () {
      const applied = yield* Migrations.run.pipe(Effect.provide(Store.layerClient(store, timeouts)))
      yield* Console.log(JSON.stringify({ kind: "agentplane.migrate.done", store: Store.show(store), applied }))
    }),
).pipe(Command.withDescription("apply pending migrations to the store, print how many as a JSON line, and exit"))
