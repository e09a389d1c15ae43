/**
 * The BatchStore battery (§5.5): every contract sentence, run against any backend.
 */
import { describe, layer } from "@effect/vitest"
import type { Backend } from "../support/Backend.js"
import { census } from "./batch/Census.js"
import { cursor } from "./batch/Cursor.js"
import { damage } from "./batch/Damage.js"
import { items } from "./batch/Items.js"
import { plan } from "./batch/Plan.js"
import { races } from "./batch/Races.js"
import { tenancy } from "./batch/Tenancy.js"

export const suite = (backend: Backend) =>
  describe("BatchStore", () => {
    // Real databases and real time: the TestClock would only stall the driver's timers.
    layer(backend.layer, { excludeTestServices: true })((it) => {
      plan(it.effect)
      items(it.effect)
      cursor(it.effect)
      census(it.effect)
      tenancy(it.effect)
      damage(it.effect)
      races(it.effect, backend)
    })
  })
