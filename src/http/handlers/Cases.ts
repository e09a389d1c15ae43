/**
 * Case routes (§8.2): the status worklist, one case with everything attached to it, and the
 * breached obligations.
 */
import { HttpApiBuilder } from "@effect/platform"
import { Effect, Option } from "effect"
import { NotFound } from "../../errors/StoreError.js"
import { CaseStore } from "../../services/CaseStore.js"
import { JournalStore } from "../../services/JournalStore.js"
import { TaskStore } from "../../services/TaskStore.js"
import { Api } from "../Api.js"
import * as Wire from "../Wire.js"
import * as Guard from "./Guard.js"

/** How many journal records a case read shows; `historyTruncated` says when there were more. */
export const HISTORY_LIMIT = 200

export const layer = HttpApiBuilder.group(Api, "cases", (handlers) =>
  Effect.gen(function* () {
    const cases = yield* CaseStore
    const tasks = yield* TaskStore
    const journal = yield* JournalStore
    return handlers
      .handle("list", ({ urlParams }) =>
        Effect.gen(function* () {
          const caller = yield* Guard.authorize("api:case.list")
          const limit = Wire.limitOf(urlParams.limit)
          // One row past the limit tells whether the list was cut.
          const rows = yield* cases.byStatus(urlParams.status ?? "escalated", limit + 1).pipe(Guard.asTenant(caller))
          return Wire.page(rows, limit, Wire.caseView)
        }),
      )
      .handle("read", ({ path }) =>
        Effect.gen(function* () {
          const caller = yield* Guard.authorize("api:case.read", path.case)
          return yield* Effect.gen(function* () {
            const kase = yield* Effect.flatMap(
              cases.case(path.case),
              Option.match({
                onNone: () => Effect.fail(new NotFound({ what: path.case })),
                onSome: Effect.succeed,
              }),
            )
            const [deadlines, attached, history] = yield* Effect.all([
              cases.deadlines(path.case),
              tasks.forCase(path.case),
              // One record past the limit tells whether the history was cut.
              journal.caseHistory(path.case, HISTORY_LIMIT + 1),
            ])
            return {
              case: Wire.caseView(kase),
              deadlines: deadlines.map(Wire.deadlineView),
              tasks: attached.map((t) => Wire.taskView(t, caller.actor, caller.roles)),
              history: history.slice(0, HISTORY_LIMIT).map(Wire.historyEntry),
              historyTruncated: history.length > HISTORY_LIMIT,
            }
          }).pipe(Guard.asTenant(caller))
        }),
      )
      .handle("obligations", ({ urlParams }) =>
        Effect.gen(function* () {
          const caller = yield* Guard.authorize("api:obligation.list")
          const limit = Wire.limitOf(urlParams.limit)
          const rows = yield* cases.breached(limit + 1).pipe(Guard.asTenant(caller))
          return Wire.page(rows, limit, Wire.deadlineView)
        }),
      )
  }),
)
