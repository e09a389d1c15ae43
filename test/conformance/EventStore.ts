/**
 * The EventStore battery (§5.2): every contract sentence, run against any backend.
 */
import { describe } from "@effect/vitest"
import { Option } from "effect"
import { type Backend, battery } from "../support/Backend.js"
import { buffer } from "./event/Buffer.js"
import { claims } from "./event/Claims.js"
import { damage } from "./event/Damage.js"
import { races } from "./event/Races.js"
import { tenancy } from "./event/Tenancy.js"
import { waits } from "./event/Waits.js"

export const suite = (backend: Backend) =>
  describe("EventStore", () => {
    battery(backend, (test, sql) => {
      buffer(test)
      waits(test)
      claims(test)
      tenancy(test)
      // Damage is planted with raw SQL, so only a backend with rows to damage has these.
      if (Option.isSome(sql)) damage(sql.value)
      races(test, backend)
    })
  })
