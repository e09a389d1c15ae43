/**
 * `GET /healthz`: public liveness. It touches no store, so an outage shows as 503 on the routes
 * that need one rather than taking the process out of a load balancer.
 */
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Api } from "../Api.js"

export const layer = HttpApiBuilder.group(Api, "health", (handlers) =>
  handlers.handle("healthz", () => Effect.succeed({ status: "ok" as const })),
)
