/**
 * The JournalStore battery (§6): every contract sentence, run against any backend.
 */
import { describe } from "@effect/vitest"
import { Option } from "effect"
import { type Backend, battery } from "../support/Backend.js"
import { acquireMany } from "./journal/AcquireMany.js"
import { alongside } from "./journal/Alongside.js"
import { append } from "./journal/Append.js"
import { damage } from "./journal/Damage.js"
import { imports } from "./journal/Import.js"
import { indexes } from "./journal/Indexes.js"
import { instances } from "./journal/Instances.js"
import { leases } from "./journal/Leases.js"
import { options } from "./journal/Options.js"
import { positions } from "./journal/Positions.js"
import { races } from "./journal/Races.js"
import { view } from "./journal/View.js"

export const suite = (backend: Backend) =>
  describe("JournalStore", () => {
    // Real time: lease expiry is the backend's clock, which the TestClock cannot move.
    battery(backend, (test, sql) => {
      append(test)
      options(test)
      leases(test)
      acquireMany(test, backend)
      indexes(test)
      imports(test)
      view(test)
      // Tampering is planted with raw SQL, so only a backend with rows to tamper with has these.
      if (Option.isSome(sql)) damage(sql.value)
      if (Option.isSome(sql)) positions(sql.value, backend)
      races(test, backend)
      instances(test, backend)
      alongside(test, backend)
    })
  })
