/**
 * `npm run demo`: the refund run of `examples/refund` on the embedded default, a SQLite file
 * (`./agentplane.db`, or `AGENTPLANE_STORE`), against simulated payment and ledger providers.
 * Prints the run, its status and the kinds of its journal records, then the case census.
 *
 *   npm run demo                      # ./agentplane.db
 *   AGENTPLANE_STORE=/tmp/x.db npm run demo
 *
 * Every run refunds 40.00 of invoice INV-2026-0042 (120.00): run it again and the same case
 * gets another refund, until a fourth would exceed the invoice and the run fails before it
 * touches the provider.
 */
import { Clock, Console, Effect, Layer, Option } from "effect"
import * as Providers from "../../examples/refund/Providers.js"
import * as Refund from "../../examples/refund/Refund.js"
import * as Tenant from "../domain/Tenant.js"
import * as Time from "../domain/Time.js"
import * as SqliteBackend from "../layers/SqliteBackend.js"
import * as Runtime from "../runtime/Runtime.js"
import { CaseStore } from "../services/CaseStore.js"
import { JournalStore } from "../services/JournalStore.js"

const tally = Providers.tally()

const program = Effect.gen(function* () {
  const runtime = yield* Runtime.Runtime
  const journal = yield* JournalStore
  const cases = yield* CaseStore
  const result = yield* Refund.start(runtime, {
    invoice: "INV-2026-0042",
    amountMinor: 4000,
    invoiceTotalMinor: 12000,
    reason: "charged twice for one order",
  })
  const kase = Option.getOrElse(result.case, () => "none")
  yield* Console.log(`run ${result.run} on case ${kase}: ${describe(result.status)}`)
  const records = yield* journal.read(result.run, 1)
  yield* Console.log(`journal (${records.length} records): ${records.map((r) => r.kind.kind).join(", ")}`)
  yield* Console.log(
    `provider: ${tally.refundCalls} refund call(s), ${tally.entries.size} ledger entr${tally.entries.size === 1 ? "y" : "ies"}`,
  )
  if (Option.isSome(result.case)) {
    const found = yield* cases.case(result.case.value)
    if (Option.isSome(found)) {
      yield* Console.log(
        `case ${found.value.id}: ${found.value.status}, ${found.value.runs.length} run(s), state ${JSON.stringify(found.value.state)}`,
      )
    }
  }
  const census = yield* cases.census(Time.fromMillis(yield* Clock.currentTimeMillis))
  yield* Console.log(`census: ${census.open} open case(s), ${census.due} deadline(s) due`)
})

const describe = (status: Effect.Effect.Success<ReturnType<typeof Refund.start>>["status"]): string => {
  switch (status._tag) {
    case "Succeeded":
      return `Succeeded ${JSON.stringify(status.output)}`
    case "Failed":
    case "Quarantined":
      return `${status._tag}: ${status.message}`
    default:
      return status._tag
  }
}

const RuntimeLive = Refund.layer().pipe(
  Layer.provideMerge(Layer.merge(SqliteBackend.layerConfig, Providers.layerInMemory(tally))),
)

program
  .pipe(
    Effect.provideService(Tenant.Tenant, Tenant.DEFAULT),
    Effect.provide(RuntimeLive),
    Effect.tapErrorCause((cause) => Console.error(`demo failed: ${cause}`)),
    Effect.runPromiseExit,
  )
  .then((exit) => {
    process.exitCode = exit._tag === "Success" ? 0 : 1
  })
