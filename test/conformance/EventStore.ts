/**
 * The EventStore battery (§5.2): every contract sentence, run against any backend.
 */
import { describe, layer } from "@effect/vitest"
import type { Backend } from "../support/Backend.js"
import { buffer } from "./event/Buffer.js"
import { claims } from "./event/Claims.js"
import { damage } from "./event/Damage.js"
import { races } from "./event/Races.js"
import { tenancy } from "./event/Tenancy.js"
import { waits } from "./event/Waits.js"

export const suite = (backend: Backend) =>
  describe("EventStore", () => {
    // Real databases and real time: the TestClock would only stall the driver's timers.
    layer(backend.layer, { excludeTestServices: true })((it) => {
      buffer(it.effect)
      waits(it.effect)
      claims(it.effect)
      tenancy(it.effect)
      damage(it.effect)
      races(it.effect, backend)
    })
  })
