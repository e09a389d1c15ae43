/**
 * The QuotaStore battery (§5.6): every contract sentence, run against any backend.
 */
import { describe, layer } from "@effect/vitest"
import type { Backend } from "../support/Backend.js"
import { admission } from "./quota/Admission.js"
import { halt } from "./quota/Halt.js"
import { races } from "./quota/Races.js"
import { spend } from "./quota/Spend.js"
import { tenancy } from "./quota/Tenancy.js"

export const suite = (backend: Backend) =>
  describe("QuotaStore", () => {
    // Real databases and real time: the TestClock would only stall the driver's timers.
    layer(backend.layer, { excludeTestServices: true })((it) => {
      admission(it.effect)
      halt(it.effect)
      spend(it.effect)
      tenancy(it.effect)
      races(it.effect, backend)
    })
  })
