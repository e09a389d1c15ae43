/**
 * `/docs` and `/openapi.json` as a browser and a proxy meet them: no vendor host in the page and
 * a CSP that keeps every connection on this origin, a strong ETag per encoding (a revalidation is
 * a bodiless 304), br or gzip as `Accept-Encoding` allows, and the credential flag. Requests go
 * through `node:http`, which (unlike fetch) shows the bytes as sent. SQLite only: no store is read.
 */
import { request } from "node:http"
import { brotliDecompressSync, gunzipSync } from "node:zlib"
import { describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as Docs from "../../src/http/Docs.js"
import { assert } from "../support/Assert.js"
import * as Backend from "../support/Backend.js"
import * as Http from "../support/Http.js"

interface Raw {
  readonly status: number
  readonly headers: Readonly<Record<string, string | undefined>>
  readonly body: Buffer
}

const get = (f: Http.Fixture, path: string, headers: Record<string, string> = {}) =>
  Effect.async<Raw>((resume) => {
    const req = request(`${f.baseUrl}${path}`, { headers }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (chunk: Buffer) => chunks.push(chunk))
      res.on("end", () =>
        resume(
          Effect.succeed({
            status: res.statusCode ?? 0,
            headers: Object.fromEntries(Object.entries(res.headers).map(([k, v]) => [k, String(v)])),
            body: Buffer.concat(chunks),
          }),
        ),
      )
    })
    req.on("error", (e) => resume(Effect.die(e)))
    req.end()
  })

describe("docs", () => {
  layer(Backend.sqlite().layer, { excludeTestServices: true })((it) => {
    it.effect("the page names no vendor host, asks for no proxy, and its CSP keeps connections on this origin", () =>
      Http.withServer((f) =>
        Effect.gen(function* () {
          const page = yield* get(f, "/docs")
          assert.strictEqual(page.status, 200)
          assert.match(page.headers["content-type"] ?? "", /^text\/html/)
          const html = page.body.toString("utf8")
          assert.isTrue(html.length > 1_000_000, "the reference bundle is inline")
          assert.deepStrictEqual(html.match(Docs.VENDOR_HOSTS), null)
          // Not even protocol-relative or plain-http (a label naming the vendor's proxy may stay: it points nowhere).
          assert.doesNotMatch(html, /(?:https?:)?\/\/[a-z0-9.-]*(?:scalar\.com|jsdelivr\.net)/)
          assert.isTrue(html.includes('"proxyUrl":""'), "no request proxy is configured")
          const csp = page.headers["content-security-policy"] ?? ""
          assert.include(csp.split("; "), "connect-src 'self'")
          assert.include(csp.split("; "), "font-src 'self' data:")
        }),
      ),
    )

    it.effect("br or gzip as Accept-Encoding allows, identity otherwise; the same bytes once decoded", () =>
      Http.withServer((f) =>
        Effect.gen(function* () {
          for (const path of ["/docs", "/openapi.json"]) {
            const plain = yield* get(f, path)
            assert.strictEqual(plain.headers["content-encoding"], undefined, path)
            const br = yield* get(f, path, { "accept-encoding": "gzip, deflate, br" })
            assert.strictEqual(br.headers["content-encoding"], "br", path)
            assert.deepStrictEqual(brotliDecompressSync(br.body), plain.body)
            const gzip = yield* get(f, path, { "accept-encoding": "gzip, br;q=0" })
            assert.strictEqual(gzip.headers["content-encoding"], "gzip", path)
            assert.deepStrictEqual(gunzipSync(gzip.body), plain.body)
            assert.strictEqual(
              (yield* get(f, path, { "accept-encoding": "br;q=0, gzip;q=0" })).body.length,
              plain.body.length,
            )
            if (path === "/docs") assert.isTrue(br.body.length < plain.body.length / 4, "the page compresses")
            assert.strictEqual(br.headers.vary, "Accept-Encoding")
          }
        }),
      ),
    )

    it.effect("a strong ETag per encoding: If-None-Match answers 304 with no body; a public page is cacheable", () =>
      Http.withServer((f) =>
        Effect.gen(function* () {
          const first = yield* get(f, "/docs", { "accept-encoding": "gzip" })
          const etag = first.headers.etag ?? ""
          assert.match(etag, /^"[A-Za-z0-9_-]+-gzip"$/)
          assert.strictEqual(first.headers["cache-control"], "public, max-age=300")
          const again = yield* get(f, "/docs", { "accept-encoding": "gzip", "if-none-match": etag })
          assert.deepStrictEqual([again.status, again.body.length, again.headers.etag], [304, 0, etag])
          // Another encoding is another representation: the gzip tag does not stand for it.
          const plain = yield* get(f, "/docs", { "if-none-match": etag })
          assert.strictEqual(plain.status, 200)
          assert.strictEqual(plain.headers.etag, etag.replace("-gzip", ""))
          const spec = yield* get(f, "/openapi.json")
          const held = yield* get(f, "/openapi.json", { "if-none-match": `"other", ${spec.headers.etag}` })
          assert.strictEqual(held.status, 304)
        }),
      ),
    )

    it.effect("with the credential flag both need a credential of the table (401 with WWW-Authenticate)", () =>
      Http.withServer(
        (f) =>
          Effect.gen(function* () {
            for (const path of ["/docs", "/openapi.json"]) {
              const none = yield* get(f, path)
              assert.strictEqual(none.status, 401, path)
              assert.match(none.headers["www-authenticate"] ?? "", /^Bearer/)
              assert.strictEqual(JSON.parse(none.body.toString("utf8"))._tag, "Unauthorized")
              assert.strictEqual((yield* get(f, path, { authorization: "Bearer tok-unknown" })).status, 401)
              // Any credential will do, whatever its roles: the document shows no tenant's data.
              const known = yield* get(f, path, { authorization: `Bearer ${f.tokens.nobody}` })
              assert.strictEqual(known.status, 200, path)
              assert.strictEqual(known.headers["cache-control"], "private, no-cache")
            }
          }),
        { docs: { credential: true } },
      ),
    )
  })
})
