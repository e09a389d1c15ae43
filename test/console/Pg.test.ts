/** The console's browser tests on the run's PostgreSQL database (fresh tenants per server). */
import { inject } from "vitest"
import * as Console from "./Console.js"
import * as Routes from "./Routes.js"

const backend = { name: "postgres", store: () => inject("pgUrl") }
Routes.suite(backend)
Console.suite(backend)
