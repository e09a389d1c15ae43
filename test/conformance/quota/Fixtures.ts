/**
 * Small builders for the QuotaStore battery; seed data always goes through the store itself.
 */
import type { Vitest } from "@effect/vitest"
import { Option } from "effect"
import { Spend } from "../../../src/domain/Quota.js"
import * as Time from "../../../src/domain/Time.js"
import type { QuotaStore } from "../../../src/services/QuotaStore.js"
import type { Backend, Stores } from "../../support/Backend.js"

/** The `it.effect` the QuotaStore battery receives. */
export type Tester = Vitest.Tester<QuotaStore | Stores>

/** A separate client with a fresh pool of `size`, for race properties. */
export const pooled = (backend: Backend, size: number) => backend.pooled(size)

export const at = (seconds: number): Time.Timestamp => Time.Timestamp.make(seconds)

export const spend = (tokens: number, minorUnits: number) => new Spend({ tokens, minorUnits })

export const limit = (n: number) => Option.some(n)
export const unlimited = Option.none<number>()
