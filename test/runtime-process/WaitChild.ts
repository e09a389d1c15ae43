/**
 * The process the wait-kill test kills at a wait's boundary: `subscribed` admits the run and
 * dies right after its subscription is durable (before RunSuspended, the lease still held);
 * `answered` delivers the event to the suspended run and dies right after the wake-up's first
 * commit (the answer with the act's announcement). It dies by SIGKILL to itself, from inside the
 * store call's continuation, so nothing after that write runs. Started as
 * `node --import tsx WaitChild.ts '<json WaitChildArgs>'`.
 */
import { Effect, Option } from "effect"
import * as Run from "../../src/domain/Run.js"
import { Tenant, TenantId } from "../../src/domain/Tenant.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import * as TestRuntime from "../../src/testing/TestRuntime.js"
import { call, dying } from "../runtime/Dying.js"
import * as Definitions from "./Definitions.js"
import * as WaitDefinitions from "./WaitDefinitions.js"

const args = JSON.parse(process.argv[2] ?? "") as WaitDefinitions.WaitChildArgs
const def = WaitDefinitions.definition(args.acts)

const faulty = dying(Definitions.stores(args.target), () => {
  // Pipes are written synchronously on Linux: the marker is out before the signal lands.
  process.stdout.write(`dying at ${args.boundary}\n`)
  process.kill(process.pid, "SIGKILL")
})
faulty.arm(
  args.boundary === "subscribed"
    ? call("EventStore", "subscribe")
    : {
        store: "JournalStore",
        method: "append",
        when: (a) =>
          (a[2] as ReadonlyArray<{ readonly kind: { readonly kind: string } }>).some(
            (x) => x.kind.kind === "EffectDone",
          ),
      },
)

const program = Effect.gen(function* () {
  const rt = yield* Runtime.Runtime
  if (args.boundary === "subscribed") {
    yield* rt.runCorrelated(def, Run.labeled({ order: args.order }, "test"), WaitDefinitions.CASE_KIND, [
      WaitDefinitions.keyOf(args.order),
    ])
  } else {
    yield* rt.deliver(WaitDefinitions.paid(args.order))
    yield* rt.idle
  }
}).pipe(
  Effect.provideService(Tenant, TenantId.make(args.tenant)),
  Effect.provide(
    TestRuntime.layer([def], {
      stores: faulty.stores,
      owner: "doomed-child",
      leaseTtlSecs: Definitions.LEASE_TTL_SECS,
    }),
  ),
)

Effect.runPromiseExit(program).then((exit) => {
  process.stderr.write(
    `child ended without dying at ${args.boundary}: ${exit._tag} ${Option.isSome(faulty.firstRun())}\n`,
  )
  process.exitCode = 3
})
