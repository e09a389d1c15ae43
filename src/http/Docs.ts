/**
 * The API's own documentation: the OpenAPI document at `/openapi.json` and a browsable page at
 * `/docs` (the Scalar reference the platform ships, inline, 3.3 MB). Both are built once per
 * process, then served with a strong ETag (a revalidation is a 304 with no body) and compressed
 * (br or gzip, as `Accept-Encoding` allows; the page shrinks about tenfold).
 *
 * **No vendor calls.** The bundle can reach its vendor: a request proxy that API-client requests
 * are routed through, a document-sharing upload ("share"/temporary link), web fonts and a package
 * registry. The page is served with no proxy configured and without the vendor's fonts, every
 * vendor host in the bundle is rewritten to `vendor.invalid` (a name that never resolves, RFC
 * 2606), and a Content-Security-Policy limits connections to this origin, so a browser refuses
 * any call elsewhere even if the bundle finds a way to make one.
 *
 * **Who may read them** (`Options.credential`): public by default, because the document holds no
 * tenant's data, only the API's shape, and a browser cannot attach a bearer token to a page it
 * navigates to; a deployment that does not publish its API surface sets the flag, and then both
 * need a credential of the table (any tenant's, any roles), as curl or a header extension sends it.
 */
import { createHash } from "node:crypto"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import { pathToFileURL } from "node:url"
import { brotliCompressSync, constants, gzipSync } from "node:zlib"
import { HttpApi, HttpApiBuilder, HttpServerRequest, HttpServerResponse, OpenApi } from "@effect/platform"
import { Effect, Option, Redacted } from "effect"
import { Unauthorized } from "./Authentication.js"
import { Credentials } from "./Credentials.js"

export interface Options {
  /** Both routes need a bearer credential of the table; default false (public). */
  readonly credential?: boolean
}

/** The CSP of the page: scripts and styles are inline; every connection, font and image stays on this origin. */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self' 'unsafe-inline' 'unsafe-eval'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "worker-src 'self' blob:",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join("; ")

/** The routes `/openapi.json` and `/docs` on the API's router. */
export const layer = (options: Options = {}) =>
  HttpApiBuilder.Router.use((router) =>
    Effect.gen(function* () {
      const { api } = yield* HttpApi.Api
      const credentials = yield* Credentials
      const spec = OpenApi.fromApi(api as HttpApi.HttpApi.Any as never)
      const json = representation(JSON.stringify(spec), "application/json")
      // Built on the first request for it: most servers (every test server) never serve the page.
      const page = yield* Effect.cached(
        Effect.promise(() => pageOf(spec).then((html) => representation(html, "text/html; charset=utf-8"))),
      )
      const headers = (extra: Record<string, string>) => ({
        "cache-control": options.credential === true ? "private, no-cache" : "public, max-age=300",
        vary: options.credential === true ? "Accept-Encoding, Authorization" : "Accept-Encoding",
        "x-content-type-options": "nosniff",
        ...extra,
      })
      const serve = (get: Effect.Effect<Representation>, extra: Record<string, string>) =>
        Effect.gen(function* () {
          const request = yield* HttpServerRequest.HttpServerRequest
          if (options.credential === true) {
            const refused = yield* refusal(credentials, request.headers.authorization)
            if (Option.isSome(refused)) return refused.value
          }
          return answer(yield* get, request.headers, headers(extra))
        })
      yield* router.get("/openapi.json", serve(Effect.succeed(json), {}))
      yield* router.get("/docs", serve(page, { "content-security-policy": CONTENT_SECURITY_POLICY }))
    }),
  )

/** The vendor hosts the bundle names; each is rewritten to one that never resolves. */
export const VENDOR_HOSTS = /https:\/\/(?:[a-z0-9-]+\.)*(?:scalar\.com|jsdelivr\.net)/g

// internal

/** One body in its three encodings, with their entity tags. */
interface Representation {
  readonly contentType: string
  readonly identity: Uint8Array
  readonly tag: string
  readonly gzip: () => Uint8Array
  readonly br: () => Uint8Array
}

const representation = (text: string, contentType: string): Representation => {
  const identity = new TextEncoder().encode(text)
  // Compressed on first use, once: most servers (every test server) never serve the page.
  let gzip: Uint8Array | undefined
  let br: Uint8Array | undefined
  return {
    contentType,
    identity,
    tag: createHash("sha256").update(identity).digest("base64url").slice(0, 27),
    gzip: () => {
      gzip ??= gzipSync(identity, { level: 6 })
      return gzip
    },
    // Quality 5: within a few percent of 11 on this bundle, at a small fraction of its time.
    br: () => {
      br ??= brotliCompressSync(identity, { params: { [constants.BROTLI_PARAM_QUALITY]: 5 } })
      return br
    },
  }
}

/** The representation `Accept-Encoding` prefers (br, then gzip, then none), or 304 when the client holds it. */
const answer = (
  body: Representation,
  headers: Readonly<Record<string, string | undefined>>,
  extra: Record<string, string>,
): HttpServerResponse.HttpServerResponse => {
  const accepted = acceptedEncodings(headers["accept-encoding"])
  const encoding = accepted.has("br") ? "br" : accepted.has("gzip") ? "gzip" : "identity"
  // A strong tag names one representation, so each encoding has its own.
  const etag = `"${body.tag}${encoding === "identity" ? "" : `-${encoding}`}"`
  const common = { ...extra, etag, ...(encoding === "identity" ? {} : { "content-encoding": encoding }) }
  const held = (headers["if-none-match"] ?? "").split(",").map((t) => t.trim().replace(/^W\//, ""))
  if (held.includes(etag) || held.includes("*")) return HttpServerResponse.empty({ status: 304, headers: common })
  const bytes = encoding === "br" ? body.br() : encoding === "gzip" ? body.gzip() : body.identity
  return HttpServerResponse.uint8Array(bytes, { contentType: body.contentType, headers: common })
}

/** The codings `Accept-Encoding` allows (q > 0); absent, none but identity. */
const acceptedEncodings = (header: string | undefined): ReadonlySet<string> => {
  const accepted = new Set<string>()
  for (const item of (header ?? "").split(",")) {
    const [coding = "", ...parameters] = item.split(";").map((part) => part.trim().toLowerCase())
    const q = parameters.find((p) => p.startsWith("q="))
    if (coding !== "" && (q === undefined || Number(q.slice(2)) > 0)) accepted.add(coding)
  }
  if (accepted.has("*")) accepted.add("br").add("gzip")
  return accepted
}

/** The 401 for a request without a known bearer credential; none when it has one. */
const refusal = (credentials: Credentials["Type"], authorization: string | undefined) =>
  Effect.gen(function* () {
    const token = /^bearer (.+)$/i.exec(authorization ?? "")?.[1]?.trim() ?? ""
    const caller = token === "" ? Option.none() : yield* credentials.lookup(Redacted.make(token))
    if (Option.isSome(caller)) return Option.none()
    const body = new Unauthorized({
      message: token === "" ? "missing credential: send Authorization: Bearer <token>" : "unknown credential",
    })
    return Option.some(
      HttpServerResponse.unsafeJson(
        { _tag: body._tag, message: body.message },
        { status: 401, headers: { "www-authenticate": 'Bearer realm="agentplane"' } },
      ),
    )
  })

/** The page: the document and a configuration inline, then the platform's Scalar bundle, vendor hosts rewritten. */
const pageOf = async (spec: OpenApi.OpenAPISpec): Promise<string> => {
  const bundle = (await loadBundle()).replace(VENDOR_HOSTS, "https://vendor.invalid")
  const config = {
    _integration: "html",
    // No request proxy: "try it" requests go from the browser to this server directly.
    proxyUrl: "",
    withDefaultFonts: false,
  }
  return `<!doctype html>
<html>
  <head>
    <meta charset="utf-8" />
    <title>${escapeText(spec.info.title)}</title>
    <meta name="viewport" content="width=device-width, initial-scale=1" />
  </head>
  <body>
    <script id="api-reference" type="application/json">${escapeJson(spec)}</script>
    <script>document.getElementById('api-reference').dataset.configuration = JSON.stringify(${escapeJson(config)})</script>
    <script>${bundle}</script>
  </body>
</html>`
}

/**
 * The Scalar bundle `@effect/platform` ships for `HttpApiScalar`, from beside that module (the
 * package does not export its internal path); loaded on first use, since it is 3.3 MB.
 */
const loadBundle = async (): Promise<string> => {
  const scalar = createRequire(import.meta.url).resolve("@effect/platform/HttpApiScalar")
  const internal = join(dirname(scalar), "internal", "httpApiScalar.js")
  const module = (await import(pathToFileURL(internal).href)) as {
    readonly javascript?: string
    readonly default?: { readonly javascript: string }
  }
  return module.javascript ?? module.default?.javascript ?? ""
}

const escapeText = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")

// `<` and the JS line terminators cannot end the script element or break the literal.
const escapeJson = (value: unknown) =>
  JSON.stringify(value)
    .replace(/</g, "\\u003c")
    .replace(/[\u2028\u2029]/g, (c) => (c === "\u2028" ? "\\u2028" : "\\u2029"))
