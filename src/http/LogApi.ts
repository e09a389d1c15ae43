/**
 * The transparency log's routes (an extension of §8.2, action `api:log.read`, §6.5): the caller
 * tenant's latest signed checkpoint, a run's inclusion proof and a consistency proof between two
 * sizes, in `LogJson`'s shapes. An auditor fetches them with curl and checks them offline
 * against the deployment's verifier key and a checkpoint they kept.
 *
 * Defined beside `Api.ts` rather than in it, so the routes and their handler read as one unit.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { RunId } from "../domain/Ids.js"
import { RunNotIntegrated, RunNotLogged, RunOutsideSize, SizeBeyondLog, SizesUnordered } from "../errors/LogError.js"
import { Corrupt, NotFound } from "../errors/StoreError.js"
import { Authentication } from "./Authentication.js"
import { AuthorizerUnavailable, Forbidden } from "./Authorizer.js"
import * as Unavailable from "./Unavailable.js"

const Hex = Schema.String.annotations({ description: "a SHA-256 hash, 64 lowercase hex digits" })

/** A signed checkpoint: its size and root, the C2SP signed note, when it was signed. */
export const CheckpointView = Schema.Struct({
  size: Schema.Number,
  root: Hex,
  note: Schema.String.annotations({ description: "the C2SP tlog-checkpoint text and its signature lines" }),
  signedAt: Schema.String,
}).annotations({ identifier: "Checkpoint" })

/** A run's leaf (canonical bytes, base64) and its RFC 9162 audit path, lowest level first. */
export const InclusionView = Schema.Struct({
  run: RunId,
  index: Schema.Number,
  size: Schema.Number,
  leaf: Schema.String.annotations({ description: "the leaf's canonical bytes in base64" }),
  leafHash: Hex,
  proof: Schema.Array(Hex),
}).annotations({ identifier: "InclusionProof" })

/** The RFC 9162 consistency proof from the tree of `from` leaves to the tree of `to`. */
export const ConsistencyView = Schema.Struct({
  from: Schema.Number,
  to: Schema.Number,
  proof: Schema.Array(Hex),
}).annotations({ identifier: "ConsistencyProof" })

/** A tree size in a query: a whole number of leaves. */
const Size = Schema.NumberFromString.pipe(Schema.int(), Schema.greaterThanOrEqualTo(0)).annotations({
  jsonSchema: { type: "integer", minimum: 0 },
})

export class TransparencyLog extends HttpApiGroup.make("log")
  .add(
    HttpApiEndpoint.get("checkpoint", "/log/checkpoint")
      .addSuccess(CheckpointView)
      .addError(NotFound, { status: 404 })
      .annotate(
        OpenApi.Summary,
        "The latest signed checkpoint of the tenant's log; a log with none yet gets the empty tree's (size 0) where the server holds the log key, 404 where it does not",
      ),
  )
  .add(
    HttpApiEndpoint.get("inclusion", "/log/inclusion")
      .setUrlParams(Schema.Struct({ run: RunId, size: Schema.optional(Size) }))
      .addSuccess(InclusionView)
      .addError(RunNotLogged, { status: 404 })
      .addError(RunNotIntegrated, { status: 409 })
      .addError(RunOutsideSize, { status: 422 })
      .addError(SizeBeyondLog, { status: 422 })
      .addError(NotFound, { status: 404 })
      .annotate(
        OpenApi.Summary,
        "A run's inclusion proof in the tree of `size` leaves (default: the latest checkpoint's)",
      ),
  )
  .add(
    HttpApiEndpoint.get("consistency", "/log/consistency")
      .setUrlParams(Schema.Struct({ from: Size, to: Schema.optional(Size) }))
      .addSuccess(ConsistencyView)
      .addError(SizesUnordered, { status: 422 })
      .addError(SizeBeyondLog, { status: 422 })
      .addError(NotFound, { status: 404 })
      .annotate(OpenApi.Summary, "The consistency proof from `from` leaves to `to` (default: the latest checkpoint's)"),
  )
  .addError(Schema.Union(Forbidden, AuthorizerUnavailable))
  .addError(Unavailable.Unavailable)
  .addError(Corrupt, { status: 500 })
  .annotate(OpenApi.Description, "The transparency log (§6.5): checkpoints and proofs an auditor checks offline")
  .middleware(Authentication) {}
