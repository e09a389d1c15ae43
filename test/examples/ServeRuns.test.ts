/**
 * `serve --runs <module>` (`Definitions.load`): the refund example's module gives its three refunds to
 * start, and a module `serve` could not run is refused before anything opens, naming the module
 * and what to change in it.
 */
import { describe, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { expect } from "vitest"
import * as Definitions from "../../src/cli/Definitions.js"

const refused = (path: string) => Effect.flip(Definitions.load(path)).pipe(Effect.map((e) => e.message))

describe("serve --runs", () => {
  it.effect("the refund example's module registers and starts its three refunds", () =>
    Effect.gen(function* () {
      const loaded = yield* Definitions.load("examples/refund/Serve.ts")
      expect(loaded.startable.map((d) => d.capability)).toEqual(["refund.reviewed", "refund.claimed", "refund"])
    }),
  )

  it.effect("no module: nothing registered, nothing to start", () =>
    Effect.gen(function* () {
      expect((yield* Definitions.fromOption(Option.none())).startable).toEqual([])
    }),
  )

  it.effect("a module serve cannot run is refused, naming it and the fix", () =>
    Effect.gen(function* () {
      expect(yield* refused("test/examples/runs/Missing.ts")).toMatch(
        /^--runs test\/examples\/runs\/Missing.ts: cannot be imported: /,
      )
      expect(yield* refused("test/examples/runs/Empty.ts")).toBe(
        "--runs test/examples/runs/Empty.ts: `definitions` must be a non-empty array of RunDefinition.make(...) values",
      )
      expect(yield* refused("test/examples/runs/NotDefinitions.ts")).toBe(
        "--runs test/examples/runs/NotDefinitions.ts: definitions[0] is not a RunDefinition (made by RunDefinition.make)",
      )
      expect(yield* refused("test/examples/runs/Twice.ts")).toBe(
        "--runs test/examples/runs/Twice.ts: capability refund is listed twice",
      )
      expect(yield* refused("README.md")).toMatch(/^--runs README.md: /)
    }),
  )
})
