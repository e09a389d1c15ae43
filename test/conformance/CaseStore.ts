/**
 * The CaseStore battery (§5.1): every contract sentence, run against any backend.
 */
import { describe, layer } from "@effect/vitest"
import type { Backend } from "../support/Backend.js"
import { correlation } from "./case/Correlation.js"
import { damage } from "./case/Damage.js"
import { deadlines } from "./case/Deadlines.js"
import { races } from "./case/Races.js"
import { reads } from "./case/Reads.js"
import { records } from "./case/Records.js"
import { tenancy } from "./case/Tenancy.js"

export const suite = (backend: Backend) =>
  describe("CaseStore", () => {
    // Real databases and real time: the TestClock would only stall the driver's timers.
    layer(backend.layer, { excludeTestServices: true })((it) => {
      correlation(it.effect)
      records(it.effect)
      deadlines(it.effect)
      reads(it.effect)
      tenancy(it.effect)
      damage(it.effect)
      races(it.effect, backend)
    })
  })
