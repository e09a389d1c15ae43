/**
 * The BatchStore battery (§5.5): every contract sentence, run against any backend.
 */
import { describe } from "@effect/vitest"
import { Option } from "effect"
import { type Backend, battery } from "../support/Backend.js"
import { census } from "./batch/Census.js"
import { cursor } from "./batch/Cursor.js"
import { damage } from "./batch/Damage.js"
import { items } from "./batch/Items.js"
import { plan } from "./batch/Plan.js"
import { races } from "./batch/Races.js"
import { tenancy } from "./batch/Tenancy.js"

export const suite = (backend: Backend) =>
  describe("BatchStore", () => {
    battery(backend, (test, sql) => {
      plan(test)
      items(test)
      cursor(test)
      census(test)
      tenancy(test)
      // Damage is planted with raw SQL, so only a backend with rows to damage has these.
      if (Option.isSome(sql)) damage(sql.value)
      races(test, backend)
    })
  })
