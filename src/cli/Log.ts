/**
 * `agentplane log checkpoint|inclusion|consistency` (§6.5): the tenant's transparency log read
 * from the store, as JSON (`LogJson`, the HTTP API's shapes): the latest signed checkpoint (or
 * the one of `--size`), a run's inclusion proof at `--size` (default: the latest), a consistency
 * proof `--from` → `--to` (default: the latest). An auditor checks them offline against a
 * checkpoint note they kept, with the deployment's verifier key: `serve` prints it, and `log
 * verifier --log-key <file> --log-name <deployment>` prints the one of a key file, opening no store.
 * With `--log-key`, a log with no checkpoint yet gets the empty tree's (size 0), as `serve
 * --log-key` answers it; without, such a log has none to print.
 */
import { Args, Command, Options } from "@effect/cli"
import { Console, Data, Effect, Either, Option } from "effect"
import { RunId } from "../domain/Ids.js"
import * as LogAudit from "../domain/LogAudit.js"
import type * as LogKey from "../domain/LogKey.js"
import * as SignedNote from "../domain/SignedNote.js"
import * as Tenant from "../domain/Tenant.js"
import * as LogJson from "../http/LogJson.js"
import { latestCheckpoint } from "../runtime/LatestCheckpoint.js"
import { JournalStore } from "../services/JournalStore.js"
import { LogStore } from "../services/LogStore.js"
import { exitWith, tenant, tenantId } from "./Export.js"
import * as LogKeyFile from "./LogKeyFile.js"
import * as StoreFlag from "./StoreFlag.js"

const what = Args.choice(
  [
    ["checkpoint", "checkpoint"],
    ["inclusion", "inclusion"],
    ["consistency", "consistency"],
    ["verify", "verify"],
    ["verifier", "verifier"],
  ] as const,
  { name: "checkpoint|inclusion|consistency|verify|verifier" },
).pipe(Args.withDescription("required: what to print (see above)"))

const run = Options.text("run").pipe(
  Options.withDescription("inclusion, verify: the sealed run (run_…); required by both"),
  Options.optional,
)

const size = Options.integer("size").pipe(
  Options.withDescription("checkpoint, inclusion: the tree size; default the latest checkpoint's"),
  Options.optional,
)

const from = Options.integer("from").pipe(
  Options.withDescription("consistency: the older tree size (required)"),
  Options.optional,
)

const to = Options.integer("to").pipe(
  Options.withDescription("consistency: the newer tree size; default the latest checkpoint's"),
  Options.optional,
)

/** The operator left out what the chosen action needs, or the log has nothing yet. */
export class LogRequestIncomplete extends Data.TaggedError("LogRequestIncomplete")<{ readonly message: string }> {}

export const command = Command.make(
  "log",
  {
    what,
    store: StoreFlag.option,
    tenant,
    run,
    size,
    from,
    to,
    timeouts: StoreFlag.timeoutOptions,
    key: LogKeyFile.options,
  },
  (flags) =>
    Effect.gen(function* () {
      const key = yield* LogKeyFile.load(flags.key)
      if (flags.what !== "verifier") return yield* fromStore(flags, key)
      if (Option.isNone(key)) return yield* new LogRequestIncomplete({ message: "log verifier needs --log-key <file>" })
      yield* Console.log(SignedNote.formatVerifierKey(key.value.signer))
    }),
).pipe(
  Command.withDescription(
    "print the tenant's transparency log as JSON: its signed checkpoint, a run's inclusion proof, a consistency proof; verify a run's chain and its inclusion in the latest checkpoint (exit 2 when either fails); print the verifier key of --log-key and --log-name (verifier); with --log-key, a log with no checkpoint yet gets the empty tree's at size 0",
  ),
)

const fromStore = (
  flags: {
    readonly what: "checkpoint" | "inclusion" | "consistency" | "verify" | "verifier"
    readonly store: string
    readonly tenant: string
    readonly run: Option.Option<string>
    readonly size: Option.Option<number>
    readonly from: Option.Option<number>
    readonly to: Option.Option<number>
    readonly timeouts: StoreFlag.Timeouts
  },
  key: Option.Option<LogKey.LogKey>,
) =>
  Effect.gen(function* () {
    const log = yield* LogStore
    const journal = yield* JournalStore
    // With the key, an empty log's checkpoint is the empty tree's, as `serve --log-key` answers it.
    const checkpoint = Effect.flatMap(
      latestCheckpoint(key),
      Option.match({
        onNone: () =>
          new LogRequestIncomplete({
            message: "the log has no checkpoint yet: nothing is integrated (--log-key signs the empty tree's)",
          }),
        onSome: Effect.succeed,
      }),
    )
    const latest = Effect.map(checkpoint, (c) => c.size)
    const sized = Option.match(flags.size, { onNone: () => latest, onSome: Effect.succeed })
    if (flags.what === "checkpoint") {
      // An empty log's size-0 checkpoint exists once signed: asking for it by size signs it too.
      if (Option.contains(flags.size, 0)) yield* latestCheckpoint(key)
      const at = yield* sized
      const cp = yield* log.checkpointAt(at)
      if (Option.isNone(cp))
        return yield* new LogRequestIncomplete({ message: `no checkpoint was signed at size ${at}` })
      return yield* Console.log(JSON.stringify(LogJson.checkpoint(cp.value)))
    }
    if (flags.what === "inclusion") {
      if (Option.isNone(flags.run))
        return yield* new LogRequestIncomplete({ message: "log inclusion needs --run <run id>" })
      const proof = yield* log.inclusionProof(RunId.make(flags.run.value), yield* sized)
      return yield* Console.log(JSON.stringify(LogJson.inclusion(proof)))
    }
    if (flags.what === "verify") {
      if (Option.isNone(flags.run))
        return yield* new LogRequestIncomplete({ message: "log verify needs --run <run id>" })
      const id = RunId.make(flags.run.value)
      const head = yield* journal.verify(id)
      const cp = yield* checkpoint
      const included = yield* log.inclusionProof(id, cp.size)
      const checked = LogAudit.checkRun(head, included, cp.root)
      const report = Either.match(checked, {
        onLeft: (e) => ({ verified: false, run: id, size: cp.size, detail: e.detail }),
        onRight: () => ({ verified: true, run: id, size: cp.size, seq: head.seq, head: head.hash }),
      })
      yield* Console.log(JSON.stringify(report))
      if (Either.isLeft(checked)) yield* exitWith(2)
      return
    }
    if (Option.isNone(flags.from))
      return yield* new LogRequestIncomplete({ message: "log consistency needs --from <size>" })
    const target = yield* Option.match(flags.to, { onNone: () => latest, onSome: Effect.succeed })
    const proof = yield* log.consistencyProof(flags.from.value, target)
    yield* Console.log(JSON.stringify(LogJson.consistency(flags.from.value, target, proof)))
  }).pipe(
    Effect.provideServiceEffect(Tenant.Tenant, tenantId(flags.tenant)),
    Effect.provide(StoreFlag.layer(flags.store, flags.timeouts)),
  )
