/**
 * The process the kill test kills: admits both runs of `Definitions.ts` on the given store and
 * tenant, each bound to its own case, and blocks inside their acts until it receives SIGKILL.
 * Started as `node --import tsx Child.ts '<json ChildArgs>'`, never through npx, so the signal
 * reaches this process and not a wrapper.
 */
import { Effect } from "effect"
import * as Run from "../../src/domain/Run.js"
import { Tenant, TenantId } from "../../src/domain/Tenant.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import * as TestRuntime from "../../src/testing/TestRuntime.js"
import * as Definitions from "./Definitions.js"

const args = JSON.parse(process.argv[2] ?? "") as Definitions.ChildArgs
const definitions = Definitions.RECOVERIES.map((name) => Definitions.definition(name, { acts: args.acts, block: true }))

const program = Effect.gen(function* () {
  const rt = yield* Runtime.Runtime
  yield* Effect.all(
    Definitions.RECOVERIES.map((name, i) =>
      rt.runCorrelated(
        definitions[i] as (typeof definitions)[number],
        Run.labeled({ amount: 40 }, "test"),
        Definitions.CASE_KIND,
        [Definitions.keyOf(name)],
      ),
    ),
    { concurrency: "unbounded" },
  )
}).pipe(
  Effect.provideService(Tenant, TenantId.make(args.tenant)),
  Effect.provide(
    TestRuntime.layer(definitions, {
      stores: Definitions.stores(args.target),
      owner: "doomed-child",
      leaseTtlSecs: Definitions.LEASE_TTL_SECS,
    }),
  ),
)

Effect.runPromiseExit(program).then((exit) => {
  // Reaching here means the acts did not block: the parent sees an exit instead of its markers.
  process.stderr.write(`child ended without being killed: ${exit._tag}\n`)
  process.exitCode = 3
})
