/**
 * `agentplane forget-admissions --older-than-days N` (§8.3): frees the admission keys admitted
 * at or before now − N days, so a client may reuse them, and prints how many. The window is
 * required: there is no default, since forgetting too much lets a retried request run twice.
 */
import { Command, Options } from "@effect/cli"
import { Clock, Config, Console, Effect, Schema } from "effect"
import * as Tenant from "../domain/Tenant.js"
import * as Time from "../domain/Time.js"
import { JournalStore } from "../services/JournalStore.js"
import { tenant, tenantId } from "./Export.js"
import * as StoreFlag from "./StoreFlag.js"

const olderThanDays = Options.integer("older-than-days").pipe(
  Options.withSchema(
    Schema.Int.pipe(
      Schema.greaterThanOrEqualTo(0, { message: () => "--older-than-days is a whole number of days, 0 or more" }),
    ),
  ),
  Options.withDescription(
    "free keys admitted at or before now minus this many days (env AGENTPLANE_OLDER_THAN_DAYS; required)",
  ),
  Options.withFallbackConfig(Config.integer("AGENTPLANE_OLDER_THAN_DAYS")),
)

export const command = Command.make(
  "forget-admissions",
  { store: StoreFlag.option, tenant, olderThanDays, timeouts: StoreFlag.timeoutOptions },
  ({ store, tenant, olderThanDays, timeouts }) =>
    Effect.gen(function* () {
      const id = yield* tenantId(tenant)
      const now = Time.fromMillis(yield* Clock.currentTimeMillis)
      const olderThan = Time.Timestamp.make(now - olderThanDays * 86_400)
      const freed = yield* Effect.flatMap(JournalStore, (journal) => journal.forgetAdmissions(olderThan)).pipe(
        Effect.provideService(Tenant.Tenant, id),
        Effect.provide(StoreFlag.layer(store, timeouts)),
      )
      // JSON like every other verb's report, so a script reads it the same way.
      yield* Console.log(JSON.stringify({ kind: "agentplane.admissions.forgotten", olderThan, freed }))
    }),
).pipe(
  Command.withDescription(
    "free admission keys admitted at or before now − N days (--older-than-days, required); print how many as a JSON line",
  ),
)
