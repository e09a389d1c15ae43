/**
 * `agentplane migrate`: applies the dialect's pending migrations and exits (§8.3). Every verb that
 * opens a store migrates anyway; this one lets a deploy do it as a step of its own. It prints one
 * JSON line saying how many it applied, so a deploy log tells a migrating release from one that
 * had nothing to do.
 */
import { Command } from "@effect/cli"
import { Console, Effect } from "effect"
import * as Migrations from "../layers/Migrations.js"
import * as StoreFlag from "./StoreFlag.js"

export const command = Command.make(
  "migrate",
  { store: StoreFlag.option, timeouts: StoreFlag.timeoutOptions },
  ({ store, timeouts }) =>
    Effect.gen(function* () {
      const applied = yield* Migrations.run.pipe(Effect.provide(StoreFlag.layerClient(store, timeouts)))
      yield* Console.log(JSON.stringify({ kind: "agentplane.migrate.done", store: StoreFlag.show(store), applied }))
    }),
).pipe(Command.withDescription("apply pending migrations to the store, print how many as a JSON line, and exit"))
