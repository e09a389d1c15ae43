/**
 * The console (issue 36): a page for reviewers and operators at `/console`, served from the
 * assets `npm run build` bundles into `dist/console` (`console/Build.ts`). The page is a client
 * of this API like curl: it holds no credential of its own, takes the caller's bearer token and
 * sends it with every call, so it can do nothing the token could not.
 *
 * The assets hold no tenant's data, so they are public, as `/docs` is. Their routes are not the
 * API's (no OpenAPI operation), but they are in the route table the request log labels with
 * (`routes`), so a page load is counted under its template, never as an unmatched 404.
 *
 * The Content-Security-Policy allows scripts, styles and connections from this origin only: no
 * inline script or style, no other host, no frame, no form posting anywhere.
 */
import { createHash } from "node:crypto"
import { existsSync, readFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import type { Route } from "./Routes.js"

/** The page's policy; see the module comment. */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join("; ")

/** Each asset by its path, with the file `dist/console` holds it in and its media type. */
export const ASSETS: ReadonlyArray<{ readonly path: string; readonly file: string; readonly type: string }> = [
  { path: "/console", file: "index.html", type: "text/html; charset=utf-8" },
  { path: "/console/console.js", file: "console.js", type: "text/javascript; charset=utf-8" },
  { path: "/console/console.css", file: "console.css", type: "text/css; charset=utf-8" },
  // Without an icon of its own, a browser asks for /favicon.ico, a 404 outside the console.
  { path: "/console/favicon.svg", file: "favicon.svg", type: "image/svg+xml" },
]

/** The console's routes, for the request log's route table. */
export const routes: ReadonlyArray<Route> = ASSETS.map(({ path }) => ({ method: "GET", path }))

/**
 * The routes of `ASSETS` on the API's router. Assets missing (a checkout never built) are
 * answered 503 naming the fix, rather than refusing to start a server whose API works.
 */
export const layer = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function* () {
    const dir = assetsDir()
    for (const asset of ASSETS) {
      const file = join(dir, asset.file)
      const body = existsSync(file) ? readFileSync(file) : undefined
      if (body === undefined) {
        yield* router.get(
          asset.path as `/${string}`,
          Effect.succeed(
            HttpServerResponse.unsafeJson(
              { _tag: "ConsoleNotBuilt", message: `${file} is missing: run npm run build` },
              { status: 503 },
            ),
          ),
        )
        continue
      }
      const etag = `"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"`
      const headers = {
        etag,
        // Revalidated on every load (a 304 is cheap), so a new version is seen at once.
        "cache-control": "no-cache",
        "content-security-policy": CONTENT_SECURITY_POLICY,
        "x-content-type-options": "nosniff",
        "referrer-policy": "no-referrer",
      }
      yield* router.get(
        asset.path as `/${string}`,
        Effect.map(HttpServerRequest.HttpServerRequest, (request) =>
          (request.headers["if-none-match"] ?? "").split(",").some((t) => t.trim() === etag)
            ? HttpServerResponse.empty({ status: 304, headers })
            : HttpServerResponse.uint8Array(body, { contentType: asset.type, headers }),
        ),
      )
    }
  }),
)

// internal

/**
 * Where the built assets are: beside `dist/src` when this module runs built
 * (`dist/src/http/Console.js`), in `dist/` when it runs from source under tsx (`src/http/Console.ts`).
 */
const assetsDir = (): string => {
  const here = dirname(fileURLToPath(import.meta.url))
  const built = join(here, "..", "..", "console")
  return existsSync(join(built, "index.html")) ? built : join(here, "..", "..", "dist", "console")
}
