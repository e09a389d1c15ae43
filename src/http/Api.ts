/**
 * The operator HTTP API (§8.2) as an `HttpApi`: typed endpoints from which the server, the
 * derived client and the OpenAPI document all come. Every group but `health` carries the bearer
 * `Authentication` middleware; `/healthz`, `/openapi.json` and the `/docs` page are public, so a
 * load balancer and a browser can reach them without a credential.
 *
 * Statuses follow §8.2: store errors carry none of their own, so each is added here with its
 * status; an error body is the tagged error encoded by its schema.
 */
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { CaseStatus } from "../domain/Case.js"
import { RunId } from "../domain/Ids.js"
import { RunOutcome } from "../domain/Journal.js"
import { MAX_NAME_BYTES } from "../domain/Limits.js"
import { AlreadyClaimed, Excluded, NotHeld, NotPending, TaskNotFound, WrongRole } from "../errors/ClaimError.js"
import { Corrupt, NotFound } from "../errors/StoreError.js"
import { VERSION } from "../Version.js"
import * as ApiDocument from "./ApiDocument.js"
import { Authentication } from "./Authentication.js"
import { AuthorizerUnavailable, Forbidden } from "./Authorizer.js"
import * as CloudEvents from "./CloudEvents.js"
import { TransparencyLog } from "./LogApi.js"
import * as Metrics from "./Metrics.js"
import * as Readiness from "./Readiness.js"
import * as RouteBundle from "./RouteBundle.js"
import { RunJournal } from "./RunJournalApi.js"
import * as Scrape from "./Scrape.js"
import * as Unavailable from "./Unavailable.js"
import * as Wire from "./Wire.js"

/** The largest request body: 1 MiB, the size of the largest journal record. */
export const MAX_BODY_BYTES = 1_048_576

/** The request failed validation; `message` names each offending field. */
export class InvalidRequest extends Schema.TaggedError<InvalidRequest>()(
  "InvalidRequest",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 422 }),
) {}

/** The body is over `MAX_BODY_BYTES`; nothing of it was read into a store. */
export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>()(
  "PayloadTooLarge",
  { limit: Schema.NonNegativeInt, message: Schema.String },
  HttpApiSchema.annotations({ status: 413 }),
) {}

/**
 * The body declares a charset other than UTF-8. Decoding it as UTF-8 anyway turned different
 * ids into one (`M\xfcller` and `M\xf6ller` both became `M\ufffdller`), so it is refused unread.
 */
export class UnsupportedMediaType extends Schema.TaggedError<UnsupportedMediaType>()(
  "UnsupportedMediaType",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 415 }),
) {}

/** What every authenticated route can answer: the policy refuses (403) or cannot evaluate (500). */
const Authorized = Schema.Union(Forbidden, AuthorizerUnavailable)

const taskPath = Schema.Struct({ task: Wire.TaskRef })
const casePath = Schema.Struct({ case: Wire.CaseRef })
const runPath = Schema.Struct({ run: RunId })

/**
 * `POST /runs` (an extension of §8.2, action `api:run.start`): the capability of a definition
 * the server registers (`serve --runs`), its input (decoded by the definition's schema), the
 * case it binds to by keys (opened with `kind` if none holds them; absent, the run has no case)
 * and an optional admission key, with which a retried start answers the first run again.
 */
export const StartRequest = Schema.Struct({
  capability: Wire.BoundedName(MAX_NAME_BYTES),
  input: Wire.AnyJson,
  case: Schema.optional(
    Schema.Struct({ kind: Wire.BoundedName(MAX_NAME_BYTES), correlation: Wire.KeysInput.pipe(Schema.minItems(1)) }),
  ),
  admissionKey: Schema.optional(Wire.BoundedName(MAX_NAME_BYTES)),
}).annotations({ parseOptions: { onExcessProperty: "error", errors: "all" }, identifier: "StartRequest" })

/** The run as `GET /runs/{run}` shows it once the start returned, and whether this request admitted it. */
export const StartAnswer = Schema.Struct({ ...Wire.RunView.fields, admitted: Schema.Boolean }).annotations({
  identifier: "StartAnswer",
})

/** The tenant's quota refuses another run (`halted`, `too_many_runs`, `spent_out`); `message` says why. */
export class AdmissionRefused extends Schema.TaggedError<AdmissionRefused>()(
  "AdmissionRefused",
  { reason: Schema.Literal("halted", "too_many_runs", "spent_out"), message: Schema.String },
  HttpApiSchema.annotations({ status: 429 }),
) {}

/** 409: the admission key admitted a run with another capability or input; `run` is that first run. */
export class AdmissionConflict extends Schema.TaggedError<AdmissionConflict>()(
  "AdmissionConflict",
  { run: RunId, message: Schema.String },
  HttpApiSchema.annotations({ status: 409 }),
) {}

/** 409: the run is sealed (`outcome`), so there is nothing left to cancel. */
export class RunClosed extends Schema.TaggedError<RunClosed>()(
  "RunClosed",
  { run: RunId, outcome: RunOutcome, message: Schema.String },
  HttpApiSchema.annotations({ status: 409 }),
) {}

// Liveness and readiness are public (a load balancer has no credential); the metrics page is
// the deployment operator's and takes the scrape credential, never a tenant's (`Scrape.ts`).
export class Health extends HttpApiGroup.make("health")
  .add(
    HttpApiEndpoint.get("healthz", "/healthz")
      .addSuccess(Wire.Health)
      .annotate(OpenApi.Summary, "Liveness: the process answers (touches no store)"),
  )
  .add(
    HttpApiEndpoint.get("readyz", "/readyz")
      .addSuccess(Readiness.Ready)
      .addError(Readiness.NotReady)
      .annotate(OpenApi.Summary, "Readiness: the store answers within a short timeout"),
  )
  .add(
    HttpApiEndpoint.get("metrics", "/metrics")
      .addSuccess(
        Wire.PrometheusText.pipe(HttpApiSchema.withEncoding({ kind: "Text", contentType: Metrics.CONTENT_TYPE })),
      )
      .middleware(Scrape.ScrapeAuthentication)
      .annotate(OpenApi.Summary, "Prometheus metrics (the scrape credential)"),
  )
  .annotate(OpenApi.Description, "Liveness and readiness (public); the metrics page (scrape credential).") {}

export class Events extends HttpApiGroup.make("events")
  .add(
    // The handler reads the body itself, by its media type (`handlers/Events.ts`): these payloads
    // are what the document shows and the derived client sends. Binary mode has no schema (the
    // body is the data in any media type), so `ApiDocument.binaryMode` adds it to the document.
    HttpApiEndpoint.post("deliver", "/events")
      .setPayload(
        Schema.Union(
          Wire.NativeEvent,
          CloudEvents.StructuredEvent.pipe(
            HttpApiSchema.withEncoding({ kind: "Json", contentType: CloudEvents.STRUCTURED }),
          ),
          CloudEvents.EventBatch.pipe(HttpApiSchema.withEncoding({ kind: "Json", contentType: CloudEvents.BATCH })),
        ),
      )
      .addSuccess(Wire.DeliveryAnswer, { status: 202 })
      .addSuccess(Wire.BatchAnswer, { status: 202 })
      .addError(Unavailable.Unavailable)
      .addError(Corrupt, { status: 500 })
      .annotate(OpenApi.Summary, "Deliver an event: native, or a CloudEvent (structured, binary or batched mode)")
      .annotate(OpenApi.Transform, ApiDocument.binaryMode),
  )
  .add(
    // The CloudEvents webhook validation handshake (HTTP Webhook §4): a sender asks, with the
    // credential it will deliver with, whether it may deliver here.
    HttpApiEndpoint.options("handshake", "/events")
      .setHeaders(
        Schema.Struct({
          "webhook-request-origin": Wire.BoundedName(MAX_NAME_BYTES),
          "webhook-request-rate": Schema.optional(Schema.String),
          "webhook-request-callback": Schema.optional(Schema.String),
        }),
      )
      .addSuccess(HttpApiSchema.Empty(200))
      .annotate(OpenApi.Summary, "CloudEvents webhook validation handshake (WebHook-Request-Origin)")
      .annotate(OpenApi.Transform, ApiDocument.handshake),
  )
  .addError(Authorized)
  .annotate(OpenApi.Description, "Inbound events (§7.9): the caller is the source")
  .middleware(Authentication) {}

export class Tasks extends HttpApiGroup.make("tasks")
  .add(
    HttpApiEndpoint.get("list", "/tasks")
      .setUrlParams(Schema.Struct({ limit: Wire.Limit }))
      .addSuccess(Wire.TaskList)
      .annotate(OpenApi.Summary, "The caller's worklist: pending tasks it may work, by rank then age"),
  )
  .add(
    HttpApiEndpoint.get("read", "/tasks/:task")
      .setPath(taskPath)
      .addSuccess(Wire.TaskView)
      .addError(TaskNotFound, { status: 404 })
      .annotate(OpenApi.Summary, "One task, with whether the caller may decide it"),
  )
  .add(
    HttpApiEndpoint.post("claim", "/tasks/:task/claim")
      .setPath(taskPath)
      .addSuccess(Wire.TaskView)
      .addError(TaskNotFound, { status: 404 })
      .addError(Excluded, { status: 403 })
      .addError(WrongRole, { status: 403 })
      .addError(NotPending, { status: 409 })
      .addError(AlreadyClaimed, { status: 409 })
      .annotate(OpenApi.Summary, "Claim a task (idempotent for its holder)"),
  )
  .add(
    HttpApiEndpoint.post("release", "/tasks/:task/release")
      .setPath(taskPath)
      .addSuccess(HttpApiSchema.NoContent)
      .addError(TaskNotFound, { status: 404 })
      .addError(NotHeld, { status: 409 })
      .annotate(OpenApi.Summary, "Release a task the caller holds"),
  )
  .add(
    HttpApiEndpoint.post("takeover", "/tasks/:task/takeover")
      .setPath(taskPath)
      .setPayload(Wire.TakeOverRequest)
      .addSuccess(Wire.TaskView)
      .addError(TaskNotFound, { status: 404 })
      .addError(Excluded, { status: 403 })
      .addError(WrongRole, { status: 403 })
      .addError(NotPending, { status: 409 })
      .addError(NotHeld, { status: 409 })
      .annotate(OpenApi.Summary, "Take a claimed task over from its holder"),
  )
  .add(
    HttpApiEndpoint.post("decide", "/tasks/:task/decide")
      .setPath(taskPath)
      .setPayload(Wire.DecisionRequest)
      .addSuccess(Wire.DecideAnswer)
      // A task that vanishes between its claim and its completion is `TaskNotFound` too
      // (`handlers/Tasks.ts`), so the route answers one 404, never the store's `NotFound`.
      .addError(TaskNotFound, { status: 404 })
      .addError(Excluded, { status: 403 })
      .addError(WrongRole, { status: 403 })
      .addError(NotPending, { status: 409 })
      .addError(AlreadyClaimed, { status: 409 })
      .annotate(OpenApi.Summary, "Decide a task: claim, answer the run waiting on it, complete"),
  )
  .addError(Authorized)
  .addError(Unavailable.Unavailable)
  .addError(Corrupt, { status: 500 })
  .annotate(OpenApi.Description, "The worklist (§7.7): the caller is the actor, with the caller's roles")
  .middleware(Authentication) {}

export class Cases extends HttpApiGroup.make("cases")
  .add(
    HttpApiEndpoint.get("list", "/cases")
      .setUrlParams(
        // Absent, the status is `escalated`: the cases that need a person. Said in the schema, so
        // a client generated from the document knows why a bare GET /cases lists so few.
        Schema.Struct({
          status: Schema.optional(
            CaseStatus.annotations({
              default: "escalated",
              description: "Which cases to list; absent, `escalated` (the cases that need a person)",
            }),
          ),
          limit: Wire.Limit,
        }),
      )
      .addSuccess(Wire.Page(Wire.CaseView, "CasePage"))
      .annotate(OpenApi.Summary, "Cases by status (default escalated)"),
  )
  .add(
    HttpApiEndpoint.get("read", "/cases/:case")
      .setPath(casePath)
      .addSuccess(Wire.CaseDetail)
      .addError(NotFound, { status: 404 })
      .annotate(OpenApi.Summary, "One case with its deadlines, tasks and journal history"),
  )
  .add(
    HttpApiEndpoint.get("obligations", "/obligations")
      .setUrlParams(Schema.Struct({ limit: Wire.Limit }))
      .addSuccess(Wire.Page(Wire.DeadlineView, "DeadlinePage"))
      .annotate(OpenApi.Summary, "Breached obligations, longest overdue first"),
  )
  .addError(Authorized)
  .addError(Unavailable.Unavailable)
  .addError(Corrupt, { status: 500 })
  .annotate(OpenApi.Description, "Cases and their obligations (§5.1)")
  .middleware(Authentication) {}

export class Runs extends HttpApiGroup.make("runs")
  .add(
    HttpApiEndpoint.get("list", "/runs")
      .setUrlParams(
        // Absent, the outcome is `quarantined`: the runs that need a person.
        Schema.Struct({
          outcome: Schema.optional(
            RunOutcome.annotations({
              default: "quarantined",
              description: "Which runs to list; absent, `quarantined`",
            }),
          ),
          limit: Wire.Limit,
        }),
      )
      .addSuccess(Wire.Page(RunId, "RunPage"))
      .annotate(OpenApi.Summary, "Runs by outcome (default quarantined), newest first"),
  )
  .add(
    HttpApiEndpoint.post("start", "/runs")
      .setPayload(StartRequest)
      .addSuccess(StartAnswer, { status: 201 })
      .addError(NotFound, { status: 404 })
      .addError(AdmissionRefused)
      .addError(AdmissionConflict)
      .annotate(OpenApi.Summary, "Start a run of a definition this server starts"),
  )
  .add(
    HttpApiEndpoint.get("read", "/runs/:run")
      .setPath(runPath)
      .addSuccess(Wire.RunView)
      .addError(NotFound, { status: 404 })
      .annotate(OpenApi.Summary, "One run: head, outcome, case, and why it waits"),
  )
  .add(
    HttpApiEndpoint.post("cancel", "/runs/:run/cancel")
      .setPath(runPath)
      .setPayload(Wire.CancelRequest)
      .addSuccess(Wire.CancelAnswer, { status: 202 })
      .addError(NotFound, { status: 404 })
      .addError(RunClosed)
      .annotate(OpenApi.Summary, "Ask for a run to be cancelled; a sealed run is 409 RunClosed"),
  )
  .addError(Authorized)
  .addError(Unavailable.Unavailable)
  .addError(Corrupt, { status: 500 })
  .annotate(OpenApi.Description, "Runs (§7): the journal's view of each")
  .middleware(Authentication) {}

export class Operations extends HttpApiGroup.make("operations")
  .add(
    HttpApiEndpoint.get("deadLetters", "/dead-letters")
      .setUrlParams(Schema.Struct({ limit: Wire.Limit }))
      .addSuccess(Wire.Page(Wire.DeadLetterView, "DeadLetterPage"))
      .annotate(OpenApi.Summary, "Events no run claimed, newest first"),
  )
  .add(
    HttpApiEndpoint.get("census", "/census")
      .addSuccess(Wire.Census)
      .annotate(OpenApi.Summary, "The tenant's gauges and emergency stop"),
  )
  .addError(Authorized)
  .addError(Unavailable.Unavailable)
  .addError(Corrupt, { status: 500 })
  .annotate(OpenApi.Description, "Operator reads (§10)")
  .middleware(Authentication) {}

export class Admin extends HttpApiGroup.make("admin")
  .add(
    HttpApiEndpoint.put("halt", "/admin/halt")
      .setPayload(Wire.HaltRequest)
      .addSuccess(HttpApiSchema.NoContent)
      .annotate(OpenApi.Summary, "Halt the tenant: admit no new runs (§5.6)"),
  )
  .add(
    HttpApiEndpoint.del("unhalt", "/admin/halt")
      .addSuccess(HttpApiSchema.NoContent)
      .annotate(OpenApi.Summary, "Lift the tenant's halt (a no-op when unset)"),
  )
  .addError(Authorized)
  .addError(Unavailable.Unavailable)
  .annotate(OpenApi.Description, "The emergency stop (§5.6)")
  .middleware(Authentication) {}

export class Policy extends HttpApiGroup.make("policy")
  .add(
    HttpApiEndpoint.get("read", "/policy")
      .addSuccess(RouteBundle.Identity)
      .annotate(OpenApi.Summary, "The policy bundle the routes are decided by: its digest, files and policy ids"),
  )
  .addError(Authorized)
  .annotate(OpenApi.Description, "The Cedar policy bundle (§7.12): its identity, never its text")
  .middleware(Authentication) {}

/**
 * Errors are listed where they can happen, so each operation's list is true: `Authorized` on
 * every authenticated group, store outages and damage where a store is read, 404 and 409 only on
 * the verbs that answer them. The three body refusals are the API's, since `Server.refusals`
 * answers them before routing; `ApiDocument.document` lists each only where it can happen.
 */
export class Api extends HttpApi.make("agentplane")
  .add(Health)
  .add(Events)
  .add(Tasks)
  .add(Cases)
  .add(Runs)
  .add(RunJournal)
  .add(TransparencyLog)
  .add(Operations)
  .add(Admin)
  .add(Policy)
  .addError(InvalidRequest)
  .addError(PayloadTooLarge)
  .addError(UnsupportedMediaType)
  .annotate(OpenApi.Title, "agentplane operator API")
  .annotate(OpenApi.Version, VERSION)
  // package.json says UNLICENSED (no licence granted); SPDX has no id for that, so a LicenseRef.
  .annotate(OpenApi.License, { name: "UNLICENSED", identifier: "LicenseRef-UNLICENSED" } as OpenApi.OpenAPISpecLicense)
  .annotate(OpenApi.Description, "The operator HTTP API of agentplane (§8): bearer credentials, one tenant each.")
  // Relative to where the document is served: the server that serves it is the one it describes.
  .annotate(OpenApi.Servers, [{ url: "/", description: "the server serving this document" }])
  // Every operation but the public ones (which say `security: []`) takes the bearer credential.
  .annotate(OpenApi.Override, { security: [{ bearer: [] }] })
  .annotate(OpenApi.Transform, ApiDocument.document) {}
