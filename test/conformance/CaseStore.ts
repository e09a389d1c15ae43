/**
 * The CaseStore battery (§5.1): every contract sentence, run against any backend.
 */
import { describe } from "@effect/vitest"
import { Option } from "effect"
import { type Backend, battery } from "../support/Backend.js"
import { correlation } from "./case/Correlation.js"
import { damage } from "./case/Damage.js"
import { deadlines } from "./case/Deadlines.js"
import { races } from "./case/Races.js"
import { reads } from "./case/Reads.js"
import { records } from "./case/Records.js"
import { tenancy } from "./case/Tenancy.js"

export const suite = (backend: Backend) =>
  describe("CaseStore", () => {
    battery(backend, (test, sql) => {
      correlation(test)
      records(test, sql)
      deadlines(test)
      reads(test, sql)
      tenancy(test)
      // Damage is planted with raw SQL, so only a backend with rows to damage has these.
      if (Option.isSome(sql)) damage(sql.value)
      races(test, backend)
    })
  })
