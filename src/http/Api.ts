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
import { Authentication } from "./Authentication.js"
import { AuthorizerUnavailable, Forbidden } from "./Authorizer.js"
import * as Metrics from "./Metrics.js"
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

export class Health extends HttpApiGroup.make("health")
  .add(HttpApiEndpoint.get("healthz", "/healthz").addSuccess(Wire.Health))
  .annotate(OpenApi.Description, "Liveness; public.") {}

export class Events extends HttpApiGroup.make("events")
  .add(
    // The payload declared here is the native shape the derived client sends; the server also
    // reads CloudEvents in structured and binary mode from the same route.
    HttpApiEndpoint.post("deliver", "/events")
      .setPayload(Wire.NativeEvent)
      .addSuccess(Wire.DeliveryAnswer, { status: 202 }),
  )
  .middleware(Authentication) {}

export class Tasks extends HttpApiGroup.make("tasks")
  .add(
    HttpApiEndpoint.get("list", "/tasks")
      .setUrlParams(Schema.Struct({ limit: Wire.Limit }))
      .addSuccess(Wire.TaskList),
  )
  .add(HttpApiEndpoint.get("read", "/tasks/:task").setPath(taskPath).addSuccess(Wire.TaskView))
  .add(HttpApiEndpoint.post("claim", "/tasks/:task/claim").setPath(taskPath).addSuccess(Wire.TaskView))
  .add(HttpApiEndpoint.post("release", "/tasks/:task/release").setPath(taskPath).addSuccess(HttpApiSchema.NoContent))
  .add(
    HttpApiEndpoint.post("takeover", "/tasks/:task/takeover")
      .setPath(taskPath)
      .setPayload(Wire.TakeOverRequest)
      .addSuccess(Wire.TaskView),
  )
  .add(
    HttpApiEndpoint.post("decide", "/tasks/:task/decide")
      .setPath(taskPath)
      .setPayload(Wire.DecisionRequest)
      .addSuccess(Wire.DecideAnswer),
  )
  .addError(TaskNotFound, { status: 404 })
  .addError(NotFound, { status: 404 })
  .addError(Excluded, { status: 403 })
  .addError(WrongRole, { status: 403 })
  .addError(AlreadyClaimed, { status: 409 })
  .addError(NotPending, { status: 409 })
  .addError(NotHeld, { status: 409 })
  .middleware(Authentication) {}

export class Cases extends HttpApiGroup.make("cases")
  .add(
    HttpApiEndpoint.get("list", "/cases")
      .setUrlParams(
        // Absent, the status is `escalated`: the cases that need a person.
        Schema.Struct({ status: Schema.optional(CaseStatus), limit: Wire.Limit }),
      )
      .addSuccess(Schema.Array(Wire.CaseView)),
  )
  .add(HttpApiEndpoint.get("read", "/cases/:case").setPath(casePath).addSuccess(Wire.CaseDetail))
  .add(
    HttpApiEndpoint.get("obligations", "/obligations")
      .setUrlParams(Schema.Struct({ limit: Wire.Limit }))
      .addSuccess(Schema.Array(Wire.DeadlineView)),
  )
  .addError(NotFound, { status: 404 })
  .middleware(Authentication) {}

export class Runs extends HttpApiGroup.make("runs")
  .add(
    HttpApiEndpoint.get("list", "/runs")
      .setUrlParams(
        // Absent, the outcome is `quarantined`: the runs that need a person.
        Schema.Struct({ outcome: Schema.optional(RunOutcome), limit: Wire.Limit }),
      )
      .addSuccess(Schema.Array(RunId)),
  )
  .add(HttpApiEndpoint.post("start", "/runs").setPayload(StartRequest).addSuccess(StartAnswer, { status: 201 }))
  .add(HttpApiEndpoint.get("read", "/runs/:run").setPath(runPath).addSuccess(Wire.RunView))
  .add(
    HttpApiEndpoint.post("cancel", "/runs/:run/cancel")
      .setPath(runPath)
      .setPayload(Wire.CancelRequest)
      .addSuccess(Wire.CancelAnswer, { status: 202 }),
  )
  .addError(NotFound, { status: 404 })
  .addError(AdmissionRefused)
  .middleware(Authentication) {}

export class Operations extends HttpApiGroup.make("operations")
  .add(
    HttpApiEndpoint.get("deadLetters", "/dead-letters")
      .setUrlParams(Schema.Struct({ limit: Wire.Limit }))
      .addSuccess(Schema.Array(Wire.DeadLetterView)),
  )
  .add(HttpApiEndpoint.get("census", "/census").addSuccess(Wire.Census))
  .add(
    HttpApiEndpoint.get("metrics", "/metrics").addSuccess(
      Wire.PrometheusText.pipe(HttpApiSchema.withEncoding({ kind: "Text", contentType: Metrics.CONTENT_TYPE })),
    ),
  )
  .middleware(Authentication) {}

export class Admin extends HttpApiGroup.make("admin")
  .add(HttpApiEndpoint.put("halt", "/admin/halt").setPayload(Wire.HaltRequest).addSuccess(HttpApiSchema.NoContent))
  .add(HttpApiEndpoint.del("unhalt", "/admin/halt").addSuccess(HttpApiSchema.NoContent))
  .middleware(Authentication) {}

export class Api extends HttpApi.make("agentplane")
  .add(Health)
  .add(Events)
  .add(Tasks)
  .add(Cases)
  .add(Runs)
  .add(Operations)
  .add(Admin)
  .addError(InvalidRequest)
  .addError(PayloadTooLarge)
  .addError(UnsupportedMediaType)
  .addError(Forbidden)
  .addError(AuthorizerUnavailable)
  // §8.2: a store outage is 503 (retry later), as `Unavailable` with its reason and never the
  // driver's text (handlers convert `Backend` in `Guard.asTenant`); damage is 500.
  .addError(Unavailable.Unavailable)
  .addError(Corrupt, { status: 500 })
  .annotate(OpenApi.Title, "agentplane operator API") {}
