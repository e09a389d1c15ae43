/**
 * Who may read `/metrics` (decided for issue 17): the page is process-wide, so it is the
 * deployment operator's, not a tenant's. The operator gives `serve` the SHA-256 digest of a scrape
 * token (`--metrics-token-digest`, made with `agentplane token-digest`); a scraper sends that
 * token as a bearer credential. A tenant's credential is not a scrape credential, whatever its
 * roles, and with no digest configured nobody may scrape (401, saying so).
 */
import { HttpApiMiddleware, HttpApiSecurity } from "@effect/platform"
import { Context, Effect, Layer, Redacted } from "effect"
import type * as Digest from "../domain/Digest.js"
import { Unauthorized } from "./Authentication.js"
import * as Credentials from "./Credentials.js"

/** The scrape credentials' digests; empty when scraping is off. */
export class ScrapeDigests extends Context.Tag("agentplane/http/ScrapeDigests")<
  ScrapeDigests,
  ReadonlySet<Digest.Digest>
>() {}

export class ScrapeAuthentication extends HttpApiMiddleware.Tag<ScrapeAuthentication>()(
  "agentplane/http/ScrapeAuthentication",
  { failure: Unauthorized, security: { bearer: HttpApiSecurity.bearer } },
) {}

/** Scraping with the tokens whose digests are `digests`. */
export const layerDigests = (digests: Iterable<Digest.Digest>): Layer.Layer<ScrapeDigests> =>
  Layer.succeed(ScrapeDigests, new Set(digests))

/** The middleware: the bearer token's digest must be one of `ScrapeDigests`. */
export const layer: Layer.Layer<ScrapeAuthentication, never, ScrapeDigests> = Layer.effect(
  ScrapeAuthentication,
  Effect.map(ScrapeDigests, (digests) =>
    ScrapeAuthentication.of({
      bearer: (token) =>
        digests.size === 0
          ? new Unauthorized({ message: "scraping is off: serve was started without --metrics-token-digest" })
          : Redacted.value(token).trim().length > 0 && digests.has(Credentials.digest(token))
            ? Effect.void
            : new Unauthorized({ message: "not a scrape credential: /metrics takes the operator's scrape token" }),
    }),
  ),
)
