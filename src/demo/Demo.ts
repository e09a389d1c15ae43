/**
 * The quickstart's main job until the HTTP program exists: the case layer on an embedded SQLite
 * file. Opens (or finds) a case by a business key, attaches a run, registers a deadline with the
 * wall-clock calendar, then lists what is due and prints the census.
 *
 *   npm run demo                      # ./agentplane.db
 *   AGENTPLANE_STORE=/tmp/x.db npm run demo
 */
import { Clock, Config, Console, Effect, Layer, Option } from "effect"
import { Calendar, layerWallClock } from "../domain/Calendar.js"
import * as CorrelationKey from "../domain/CorrelationKey.js"
import * as Deadline from "../domain/Deadline.js"
import { generateRunId } from "../domain/Ids.js"
import * as Tenant from "../domain/Tenant.js"
import * as Time from "../domain/Time.js"
import * as SqliteBackend from "../layers/SqliteBackend.js"
import { CaseStore } from "../services/CaseStore.js"

const program = Effect.gen(function* () {
  const store = yield* CaseStore
  const calendar = yield* Calendar
  // The runtime side reads the clock; stores are always handed the instant.
  const now = Time.fromMillis(yield* Clock.currentTimeMillis)
  const invoice = CorrelationKey.make("invoice", "INV-2026-0042")

  const correlation = yield* store.correlateOrOpen("invoice-dispute", [invoice], now)
  yield* Console.log(`${correlation._tag} ${correlation.case} for ${invoice}`)

  const run = generateRunId()
  yield* store.attachRun(correlation.case, run)

  // Due now, with a warning a minute ago, so the listing below has something to show.
  const resolvedAt = yield* calendar.resolve(now, Deadline.minutes(0))
  yield* store.registerDeadline(
    new Deadline.Deadline({
      case: correlation.case,
      name: "acknowledge",
      resolvedAt,
      calendarDigest: calendar.digest,
      warnAt: Option.some(Time.Timestamp.make(resolvedAt - 60)),
      state: "pending",
    }),
  )

  const kase = yield* store.case(correlation.case)
  if (Option.isSome(kase)) {
    yield* Console.log(
      `case ${kase.value.id}: ${kase.value.status}, ${kase.value.runs.length} run(s), keys ${kase.value.correlation.join(", ")}`,
    )
  }
  for (const d of yield* store.due(now, 10)) {
    yield* Console.log(`due: ${d.case}/${d.name} at ${Time.toRfc3339(d.resolvedAt)} (${d.state})`)
  }
  const census = yield* store.census(now)
  yield* Console.log(
    `census: ${census.open} open case(s), oldest ${Option.getOrElse(census.oldestAgeSecs, () => 0)} s, ${census.due} deadline(s) due`,
  )
})

const StoreLive = Layer.unwrapEffect(
  Effect.map(Config.withDefault(Config.string("AGENTPLANE_STORE"), "./agentplane.db"), (filename) =>
    SqliteBackend.layer({ filename }),
  ),
)

program
  .pipe(
    Effect.provideService(Tenant.Tenant, Tenant.DEFAULT),
    Effect.provide(Layer.mergeAll(StoreLive, layerWallClock)),
    Effect.tapErrorCause((cause) => Console.error(`demo failed: ${cause}`)),
    Effect.runPromiseExit,
  )
  .then((exit) => {
    process.exitCode = exit._tag === "Success" ? 0 : 1
  })
