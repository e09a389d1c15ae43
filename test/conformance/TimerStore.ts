/**
 * The TimerStore battery (§5.3): every contract sentence, run against any backend.
 */
import { describe, layer } from "@effect/vitest"
import type { Backend } from "../support/Backend.js"
import { damage } from "./timer/Damage.js"
import { races } from "./timer/Races.js"
import { tenancy } from "./timer/Tenancy.js"
import { verbs } from "./timer/Verbs.js"

export const suite = (backend: Backend) =>
  describe("TimerStore", () => {
    // Real databases and real time: the TestClock would only stall the driver's timers.
    layer(backend.layer, { excludeTestServices: true })((it) => {
      verbs(it.effect)
      tenancy(it.effect)
      damage(it.effect)
      races(it.effect, backend)
    })
  })
