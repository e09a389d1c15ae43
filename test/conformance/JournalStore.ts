/**
 * The JournalStore battery (§6): every contract sentence, run against any backend.
 */
import { describe, layer } from "@effect/vitest"
import type { Backend } from "../support/Backend.js"
import { append } from "./journal/Append.js"
import { damage } from "./journal/Damage.js"
import { layerOf } from "./journal/Fixtures.js"
import { indexes } from "./journal/Indexes.js"
import { leases } from "./journal/Leases.js"
import { races } from "./journal/Races.js"

export const suite = (backend: Backend) =>
  describe("JournalStore", () => {
    // Real databases and real time: lease expiry is the backend's clock, which the TestClock cannot move.
    layer(layerOf(backend), { excludeTestServices: true })((it) => {
      append(it.effect)
      leases(it.effect)
      indexes(it.effect, backend)
      damage(it.effect)
      races(it.effect, backend)
    })
  })
