/**
 * Operator reads (§8.2, §10): dead letters and the tenant's census (the metrics page is in `Health.ts`).
 */
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { CaseStore } from "../../services/CaseStore.js"
import { EventStore } from "../../services/EventStore.js"
import { QuotaStore } from "../../services/QuotaStore.js"
import { TaskStore } from "../../services/TaskStore.js"
import { TimerStore } from "../../services/TimerStore.js"
import { Api } from "../Api.js"
import * as Wire from "../Wire.js"
import * as Guard from "./Guard.js"

export const layer = HttpApiBuilder.group(Api, "operations", (handlers) =>
  Effect.gen(function* () {
    const cases = yield* CaseStore
    const events = yield* EventStore
    const tasks = yield* TaskStore
    const timers = yield* TimerStore
    const quota = yield* QuotaStore
    const census = Effect.gen(function* () {
      const [kases, pendingTimers, openTasks, runningRuns, halted] = yield* Effect.all([
        Effect.flatMap(Guard.now, cases.census),
        timers.pendingCount(),
        tasks.openCount(),
        quota.running(),
        quota.halted(),
      ])
      return {
        openCases: kases.open,
        oldestCaseAgeSecs: kases.oldestAgeSecs,
        dueDeadlines: kases.due,
        pendingTimers,
        openTasks,
        runningRuns,
        halted,
      }
    })
    return handlers
      .handle("deadLetters", ({ urlParams }) =>
        Effect.gen(function* () {
          const caller = yield* Guard.authorize("api:deadletter.list")
          const limit = Wire.limitOf(urlParams.limit)
          // One row past the limit tells whether the list was cut.
          const rows = yield* events.deadLetters(limit + 1).pipe(Guard.asTenant(caller))
          return Wire.page(rows, limit, Wire.deadLetterView)
        }),
      )
      .handle("census", () =>
        Effect.gen(function* () {
          const caller = yield* Guard.authorize("api:census.read")
          return yield* census.pipe(Guard.asTenant(caller))
        }),
      )
  }),
)
