/**
 * The TimerStore battery (§5.3): every contract sentence, run against any backend.
 */
import { describe } from "@effect/vitest"
import { Option } from "effect"
import { type Backend, battery } from "../support/Backend.js"
import { damage } from "./timer/Damage.js"
import { races } from "./timer/Races.js"
import { tenancy } from "./timer/Tenancy.js"
import { verbs } from "./timer/Verbs.js"

export const suite = (backend: Backend) =>
  describe("TimerStore", () => {
    battery(backend, (test, sql) => {
      verbs(test)
      tenancy(test)
      // Damage is planted with raw SQL, so only a backend with rows to damage has these.
      if (Option.isSome(sql)) damage(sql.value)
      races(test, backend)
    })
  })
