/**
 * Run routes (§8.2): runs by outcome, one run's definition and version (§7.13), head, outcome,
 * case, suspend reason and policy decisions (§7.12, `PolicyDecision`), and the cancellation request. A run is found in the caller's tenant only, so another tenant's run is
 * an unknown one (404).
 *
 * `POST /runs` (an extension: the spec has no start route) starts a run of a definition the
 * server was given to start (`Startable`), as the caller's tenant. The request drives the run
 * until it first suspends or concludes, as `Runtime.run` does, and answers what `GET /runs/{run}`
 * would then show: a run that waits for a person or an event answers at once, one whose first
 * acts are slow holds the request that long. If the server dies meanwhile the run is recovered
 * by a sweep once its lease lapses; a client that gave an admission key retries safely.
 */
import { HttpApiBuilder } from "@effect/platform"
import { Context, Effect, Option, ParseResult, Schema } from "effect"
import * as CorrelationKey from "../../domain/CorrelationKey.js"
import type { RunId } from "../../domain/Ids.js"
import type { RunOutcome } from "../../domain/Journal.js"
import * as Run from "../../domain/Run.js"
import { NotFound } from "../../errors/StoreError.js"
import type * as RunDefinition from "../../runtime/RunDefinition.js"
import { Runtime } from "../../runtime/Runtime.js"
import { JournalStore } from "../../services/JournalStore.js"
import { TaskStore } from "../../services/TaskStore.js"
import {
  AdmissionConflict,
  AdmissionRefused,
  Api,
  InvalidRequest,
  PayloadTooLarge,
  RunClosed,
  type StartRequest,
} from "../Api.js"
import * as PolicyDecision from "../PolicyDecision.js"
import * as Unavailable from "../Unavailable.js"
import * as Wire from "../Wire.js"
import * as Guard from "./Guard.js"

/** The definitions `POST /runs` may start, by capability; a server without it starts none. */
export class Startable extends Context.Tag("agentplane/http/Startable")<
  Startable,
  ReadonlyMap<string, RunDefinition.Any>
>() {}

/** `Startable` for `definitions` (their capabilities are distinct: `serve --runs` checks it). */
export const startable = (definitions: ReadonlyArray<RunDefinition.Any>) =>
  new Map(definitions.map((def) => [def.capability, def] as const))

export const layer = HttpApiBuilder.group(Api, "runs", (handlers) =>
  Effect.gen(function* () {
    const journal = yield* JournalStore
    const tasks = yield* TaskStore
    const runtime = yield* Runtime
    const definitions = Option.getOrElse(yield* Effect.serviceOption(Startable), () => new Map())
    /** The run's head, or `NotFound` when the tenant has no record of it. */
    const known = (run: RunId) =>
      Effect.flatMap(journal.head(run), (head) =>
        head.seq === 0 ? Effect.fail(new NotFound({ what: run })) : Effect.succeed(head),
      )
    /**
     * The run's view from its last record (its state) and the records its policy decisions are
     * read from (`viewRecords`), not its whole journal: a long run costs what it decided, and its
     * every record is paged by `GET /runs/{run}/journal`.
     */
    const view = (run: RunId) =>
      Effect.gen(function* () {
        const records = yield* journal.viewRecords(run)
        const last = records[records.length - 1]
        if (last === undefined) return yield* new NotFound({ what: run })
        // The admission, for the definition the run is pinned to: one record, read by its seq.
        const first = records[0]?.seq === 1 ? records[0] : (yield* journal.readPage(run, 1, 1))[0]
        const seen = Wire.runView(run, { seq: last.seq, hash: last.hash }, records, Option.fromNullable(first))
        return { ...seen, decisions: yield* Effect.forEach(seen.decisions, named) }
      })
    /** An approval whose task is still open: the journal does not name its action yet, the task does. */
    const named = (decision: PolicyDecision.PolicyDecision) =>
      decision._tag === "Approval" && Option.isNone(decision.action) && Option.isSome(decision.task)
        ? Effect.map(tasks.task(decision.task.value), (task) => ({
            ...decision,
            action: Option.flatMap(task, PolicyDecision.proposedKind),
          }))
        : Effect.succeed(decision)
    return handlers
      .handle("list", ({ urlParams }) =>
        Effect.gen(function* () {
          const caller = yield* Guard.authorize("api:run.list")
          const limit = Wire.limitOf(urlParams.limit)
          // One row past the limit tells whether the list was cut (every list route's shape).
          const runs = yield* journal
            .runsByOutcome(urlParams.outcome ?? "quarantined", limit + 1)
            .pipe(Guard.asTenant(caller))
          return Wire.page(runs, limit, (run) => run)
        }),
      )
      .handle("start", ({ payload }) =>
        Effect.gen(function* () {
          const caller = yield* Guard.authorize("api:run.start", payload.capability)
          const def = definitions.get(payload.capability)
          if (def === undefined) {
            const known = [...definitions.keys()]
            return yield* new InvalidRequest({
              message: `capability: this server starts no ${JSON.stringify(payload.capability)}; ${
                known.length === 0 ? "it was given no runs (serve --runs)" : `it starts ${known.join(", ")}`
              }`,
            })
          }
          // `Any`'s schema would infer an unknown context; a definition's input schema needs none.
          const schema = def.input as Schema.Schema<unknown, unknown, never>
          const input = yield* Schema.decodeUnknown(schema, { errors: "all", onExcessProperty: "error" })(
            payload.input,
          ).pipe(
            // One `input.<path>: <problem>` per issue, as the other routes name their fields.
            Effect.mapError(
              (e) =>
                new InvalidRequest({
                  message: ParseResult.ArrayFormatter.formatErrorSync(e)
                    .map((issue) => `${["input", ...issue.path].join(".")}: ${issue.message}`)
                    .join("; "),
                }),
            ),
          )
          return yield* Effect.gen(function* () {
            const { run, admitted } = yield* admit(runtime, def, input, payload, caller.actor)
            return { ...(yield* view(run)), admitted }
          }).pipe(Guard.asTenant(caller))
        }),
      )
      .handle("read", ({ path }) =>
        Effect.gen(function* () {
          const caller = yield* Guard.authorize("api:run.read", path.run)
          return yield* Effect.gen(function* () {
            return yield* view(path.run)
          }).pipe(Guard.asTenant(caller))
        }),
      )
      .handle("cancel", ({ path, payload }) =>
        Effect.gen(function* () {
          const caller = yield* Guard.authorize("api:run.cancel", path.run)
          return yield* Effect.gen(function* () {
            yield* known(path.run)
            const requested = yield* runtime
              .cancel(path.run, caller.actor, payload.reason)
              .pipe(
                Effect.catchTag(
                  "RunClosed",
                  (e) => new RunClosed({ run: path.run, outcome: e.outcome as RunOutcome, message: e.message }),
                ),
              )
            return { requested }
          }).pipe(Guard.asTenant(caller))
        }),
      )
  }),
)

// internal

/**
 * Admits and drives the run; `admitted: false` names the run an earlier start admitted under the
 * same admission key, which this request did not touch. The input's trust label names the caller (`api:<actor>`): it came over the API
 * from that credential, and nothing else vouches for it.
 */
const admit = (
  runtime: Runtime["Type"],
  def: RunDefinition.Any,
  input: unknown,
  request: typeof StartRequest.Type,
  actor: string,
) => {
  const labeled = Run.labeled(input, `api:${actor}`)
  const started = Option.match(Option.fromNullable(request.case), {
    onNone: () =>
      request.admissionKey === undefined
        ? runtime.run(def, labeled)
        : runtime.run(def, labeled, { admissionKey: request.admissionKey }),
    onSome: ({ kind, correlation }) => {
      const keys = correlation.map((k) => CorrelationKey.make(k.namespace, k.value))
      return request.admissionKey === undefined
        ? runtime.runCorrelated(def, labeled, kind, keys)
        : runtime.runCorrelated(def, labeled, kind, keys, { admissionKey: request.admissionKey })
    },
  })
  return started.pipe(
    Effect.map((result) => ({ run: result.run, admitted: true })),
    Effect.catchTags({
      DuplicateAdmission: (e) => Effect.succeed({ run: e.run as RunId, admitted: false }),
      AdmissionConflict: (e) => new AdmissionConflict({ run: e.run as RunId, message: e.message }),
      Halted: (e) => new AdmissionRefused({ reason: "halted", message: e.message }),
      TooManyRuns: (e) => new AdmissionRefused({ reason: "too_many_runs", message: e.message }),
      SpentOut: (e) => new AdmissionRefused({ reason: "spent_out", message: e.message }),
      QuotaUnavailable: () =>
        new Unavailable.Unavailable({ reason: "backend", message: "the quota cannot be read; retry later" }),
      PlanContract: (e) => new InvalidRequest({ message: e.message }),
      // The server was started without a policy for its runs: nothing the caller can change.
      PolicyMissing: (e) => new Unavailable.Unavailable({ reason: "backend", message: e.message }),
      RecordTooLarge: (e) => new PayloadTooLarge({ limit: e.limit, message: e.message }),
    }),
    // A fresh run has no other owner and no earlier records: the rest is a bug.
    Effect.catchTags({
      LeaseHeld: Effect.die,
      CancelPending: Effect.die,
      Crashed: Effect.die,
      RunSealed: Effect.die,
      Fenced: Effect.die,
      DuplicateEffect: Effect.die,
    }),
  )
}
