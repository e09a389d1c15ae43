/**
 * `GET /runs/{run}/journal` (an extension of §8.2, action `api:run.journal`): a run's journal
 * records in order, each with its payload as the journal holds it (the kind's fields: an
 * effect's announcement, outcome, attempt, spend and trust labels; a conclusion's reason). The
 * console's run page draws its timeline from it; `GET /runs/{run}` shows only the last record.
 *
 * Defined beside `Api.ts` rather than in it, so the route and its handler read as one unit.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { EffectKey } from "../domain/EffectKey.js"
import { RunId, Seq, StepId } from "../domain/Ids.js"
import { Phase } from "../domain/Phase.js"
import { Corrupt, NotFound } from "../errors/StoreError.js"
import { Authentication } from "./Authentication.js"
import { AuthorizerUnavailable, Forbidden } from "./Authorizer.js"
import * as Unavailable from "./Unavailable.js"
import * as Wire from "./Wire.js"

/** One journal record: its place in the chain and its payload, tagged by `kind`. */
export const JournalEntry = Schema.Struct({
  seq: Seq,
  step: StepId,
  phase: Phase,
  effect: Schema.OptionFromNullOr(EffectKey),
  hash: Schema.String,
  record: Wire.AnyJson,
}).annotations({ identifier: "JournalEntry" })
export type JournalEntry = typeof JournalEntry.Type

/** `?from=`: the first sequence number to show (1 … ), default 1. */
const From = Schema.optional(
  Schema.NumberFromString.pipe(Schema.int(), Schema.greaterThanOrEqualTo(1)).annotations({
    jsonSchema: { type: "integer", minimum: 1, default: 1, description: "the first sequence number to show" },
  }),
)

export class RunJournal extends HttpApiGroup.make("journal")
  .add(
    HttpApiEndpoint.get("read", "/runs/:run/journal")
      .setPath(Schema.Struct({ run: RunId }))
      .setUrlParams(Schema.Struct({ from: From, limit: Wire.Limit }))
      .addSuccess(Wire.Page(JournalEntry, "JournalPage"))
      .addError(NotFound, { status: 404 })
      .annotate(OpenApi.Summary, "A run's journal records from `from`, in order"),
  )
  .addError(Schema.Union(Forbidden, AuthorizerUnavailable))
  .addError(Unavailable.Unavailable)
  .addError(Corrupt, { status: 500 })
  .annotate(OpenApi.Description, "A run's journal (§6), record by record")
  .middleware(Authentication) {}
