/**
 * Why a run ended is in the log, not only in the raw journal: one structured line per run that
 * fails, quarantines or is exhausted (warn), naming the run, the outcome and the reason its
 * conclusion journals; a success writes none.
 */
import { describe, it } from "@effect/vitest"
import { Effect, HashMap, Logger, LogLevel, Schema } from "effect"
import { expect } from "vitest"
import * as Run from "../../src/domain/Run.js"
import * as RunDefinition from "../../src/runtime/RunDefinition.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import * as Step from "../../src/runtime/Step.js"
import { StepCtx } from "../../src/runtime/StepCtx.js"
import * as Backend from "../support/Backend.js"
import * as Support from "./Support.js"

interface Line {
  readonly message: unknown
  readonly level: string
  readonly annotations: Record<string, unknown>
}

/** Every log line of `effect`, with its level and annotations. */
const capturing = <A, E, R>(effect: Effect.Effect<A, E, R>) => {
  const lines: Array<Line> = []
  const logger = Logger.make<unknown, void>(({ message, logLevel, annotations }) => {
    lines.push({
      message: Array.isArray(message) ? message[0] : message,
      level: logLevel.label,
      annotations: Object.fromEntries(HashMap.toEntries(annotations)),
    })
  })
  return Effect.map(
    effect.pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger)), Logger.withMinimumLogLevel(LogLevel.All)),
    (a) => ({ a, lines: lines.filter((l) => l.message === "agentplane.run.concluded") }),
  )
}

const definition = (capability: string, body: Effect.Effect<unknown, unknown, StepCtx>) =>
  RunDefinition.make({
    capability,
    input: Schema.Struct({ n: Schema.Number }),
    output: Schema.Unknown,
    plan: [Step.make({ name: "only", body: () => body })],
  })

export const suite = (backend: Backend.Backend) =>
  describe("conclusion log lines", () => {
    it.live(
      "a failed and a quarantined run each log one warn line with run, outcome and reason; a success none",
      () => {
        const counter = new Support.Counter()
        const read = Support.counting(counter, "logs.read", { mutates: false })
        const ok = definition(
          "logs.ok",
          Effect.flatMap(StepCtx, (cx) => cx.perform(read, { n: 1 })),
        )
        const failing = definition("logs.fail", Effect.fail(new Support.Rejected({ reason: "card declined" })))
        const dying = Support.acting("logs.charge", { mutates: true, recovery: Run.Recovery.RequiresOperator() }, () =>
          Effect.die(new Error("hung up")),
        )
        const quarantined = definition(
          "logs.quarantine",
          Effect.flatMap(StepCtx, (cx) => cx.perform(dying, { n: 1 })),
        )
        return Effect.gen(function* () {
          const rt = yield* Runtime.Runtime
          const { a: results, lines } = yield* capturing(
            Effect.all([ok, failing, quarantined].map((d) => rt.run(d, Run.labeled({ n: 1 }, "test")))),
          )
          const [succeeded, failed, held] = results
          expect(succeeded?.status._tag).toBe("Succeeded")
          expect(lines.map((l) => [l.level, l.annotations.run, l.annotations.outcome])).toEqual([
            ["WARN", failed?.run, "failed"],
            ["WARN", held?.run, "quarantined"],
          ])
          expect(String(lines[0]?.annotations.reason)).toContain("card declined")
          expect(String(lines[1]?.annotations.reason)).toContain("logs.charge ek:")
          expect(String(lines[1]?.annotations.reason)).toContain("(step 0 only, forward)")
        }).pipe(Support.on(Support.runtime(backend, [ok, failing, quarantined])), Backend.asFreshTenant)
      },
    )
  })
