/**
 * The TaskStore battery (§5.4): every contract sentence, run against any backend.
 */
import { describe } from "@effect/vitest"
import { Option } from "effect"
import { type Backend, battery } from "../support/Backend.js"
import { claims } from "./task/Claims.js"
import { damage } from "./task/Damage.js"
import { queue } from "./task/Queue.js"
import { races } from "./task/Races.js"
import { records } from "./task/Records.js"
import { tenancy } from "./task/Tenancy.js"

export const suite = (backend: Backend) =>
  describe("TaskStore", () => {
    battery(backend, (test, sql) => {
      records(test)
      claims(test)
      // The plan check runs only where the backend has a planner worth asking.
      queue(test, Option.all({ test: sql, explain: Option.flatMap(backend.sql, (s) => s.explain) }))
      tenancy(test)
      // Damage is planted with raw SQL, so only a backend with rows to damage has these.
      if (Option.isSome(sql)) damage(sql.value)
      races(test, backend)
    })
  })
