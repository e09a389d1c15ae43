/**
 * Small builders for the EventStore battery; seed data always goes through the store itself.
 */
import { randomBytes } from "node:crypto"
import type { Vitest } from "@effect/vitest"
import { Effect, Option } from "effect"
import * as CorrelationKey from "../../../src/domain/CorrelationKey.js"
import { EffectKey } from "../../../src/domain/EffectKey.js"
import { InboundEvent, Subscription } from "../../../src/domain/Event.js"
import { type CaseId, generateRunId, type RunId, StepId } from "../../../src/domain/Ids.js"
import type { Json } from "../../../src/domain/Json.js"
import type { Phase } from "../../../src/domain/Phase.js"
import * as Time from "../../../src/domain/Time.js"
import { EventStore } from "../../../src/services/EventStore.js"
import type { Stores } from "../../support/Backend.js"

/** The `it.effect` this battery receives. */
export type Tester = Vitest.Tester<EventStore | Stores>

export const at = (seconds: number): Time.Timestamp => Time.Timestamp.make(seconds)

export const key = (namespace: string, value: string) => CorrelationKey.make(namespace, value)

/** A fresh effect key (64 lowercase hex). */
export const effectKey = (): EffectKey => EffectKey.make(randomBytes(32).toString("hex"))

export const event = (
  id: string,
  correlation: ReadonlyArray<CorrelationKey.CorrelationKey>,
  options: { readonly source?: string; readonly kind?: string; readonly payload?: Json } = {},
): InboundEvent =>
  new InboundEvent({
    source: options.source ?? "mail",
    id,
    kind: options.kind ?? "reply",
    correlation,
    payload: options.payload ?? { id },
  })

export const wait = (
  correlation: ReadonlyArray<CorrelationKey.CorrelationKey>,
  options: {
    readonly run?: RunId
    readonly effect?: EffectKey
    readonly kind?: string
    readonly step?: number
    readonly phase?: Phase
    readonly case?: CaseId
  } = {},
): Subscription =>
  new Subscription({
    run: options.run ?? generateRunId(),
    case: Option.fromNullable(options.case),
    effect: options.effect ?? effectKey(),
    step: StepId.make(options.step ?? 3),
    phase: options.phase ?? "forward",
    kind: options.kind ?? "reply",
    correlation,
  })

/** The same wait with its keys in stored order, (namespace, value). */
export const asStored = (sub: Subscription): Subscription =>
  new Subscription({ ...sub, correlation: [...sub.correlation].sort(CorrelationKey.order) })

/** The same event with its keys in stored order and `payload` in place of its own. */
export const stored = (e: InboundEvent, payload: Json = e.payload): InboundEvent =>
  new InboundEvent({ ...e, correlation: [...e.correlation].sort(CorrelationKey.order), payload })

/** Buffers `e` at `receivedAt`, which the test expects to be new. */
export const buffered = (e: InboundEvent, receivedAt: number) =>
  Effect.flatMap(EventStore, (s) => s.buffer(e, at(receivedAt))).pipe(
    Effect.flatMap((fresh) => (fresh ? Effect.void : Effect.dieMessage(`${e.id} was already buffered`))),
  )
