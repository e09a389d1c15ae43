import { Schema } from "effect"

/** Which half of a saga an effect belongs to; part of the effect key and of every record. */
export const Phase = Schema.Literal("forward", "compensating")
export type Phase = typeof Phase.Type
