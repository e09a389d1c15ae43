/** The console's browser tests on a fresh SQLite file. */

import { randomUUID } from "node:crypto"
import { join } from "node:path"
import { inject } from "vitest"
import * as Console from "./Console.js"
import * as Routes from "./Routes.js"

const backend = { name: "sqlite", store: () => join(inject("scratchDir"), `console-${randomUUID()}.db`) }
Routes.suite(backend)
Console.suite(backend)
