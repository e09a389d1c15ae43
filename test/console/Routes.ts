/**
 * The console's routes as `serve` serves them, without a browser: the page and its assets under
 * a Content-Security-Policy of this origin only; none of them an operation of the OpenAPI
 * document; each labelled by its own route in the latency histogram, never as `unmatched`; and
 * `--no-console` makes `/console` an unknown route (404 `NoSuchRoute`).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { build } from "../../console/Build.js"
import * as Fixture from "./Fixture.js"

export const suite = (backend: Fixture.Backend) =>
  describe(`console routes (${backend.name})`, () => {
    let on: Fixture.Fixture | undefined
    let off: Fixture.Fixture | undefined

    beforeAll(async () => {
      await build()
      // Each kept as it comes, so one that fails to start still leaves the other for afterAll to stop.
      const [first, second] = await Promise.allSettled([
        Fixture.start(backend),
        Fixture.start(backend, ["--no-console"]),
      ])
      if (first.status === "fulfilled") on = first.value
      if (second.status === "fulfilled") off = second.value
      if (first.status === "rejected") throw first.reason
      if (second.status === "rejected") throw second.reason
    }, 180_000)

    afterAll(() => Promise.all([Fixture.stop(on), Fixture.stop(off)]), 60_000)

    it("serves the page and its assets from this origin only, under a strict CSP", async () => {
      const base = (on as Fixture.Fixture).base
      const page = await fetch(`${base}/console`)
      expect(page.status).toBe(200)
      const csp = page.headers.get("content-security-policy") ?? ""
      expect(csp.split("; ")).toEqual(
        expect.arrayContaining(["default-src 'self'", "script-src 'self'", "style-src 'self'", "connect-src 'self'"]),
      )
      expect(csp).not.toContain("unsafe-inline")
      const html = await page.text()
      // No inline script or style, nothing from another host.
      expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>|<style|\sstyle=|https?:\/\//)
      for (const [path, type] of [
        ["/console/console.js", "text/javascript"],
        ["/console/console.css", "text/css"],
      ]) {
        const asset = await fetch(`${base}${path}`)
        expect([asset.status, asset.headers.get("content-type")?.split(";")[0]]).toEqual([200, type])
        const etag = asset.headers.get("etag") ?? ""
        const again = await fetch(`${base}${path}`, { headers: { "if-none-match": etag } })
        expect(again.status).toBe(304)
      }
    })

    it("its routes are not API operations, and metrics label them by route, never as unmatched", async () => {
      const f = on as Fixture.Fixture
      for (const path of ["/console", "/console/console.js", "/console/console.css", "/console/favicon.svg"]) {
        expect((await fetch(`${f.base}${path}`)).status).toBe(200)
      }
      const doc = (await (await fetch(`${f.base}/openapi.json`)).json()) as { paths: Record<string, unknown> }
      expect(Object.keys(doc.paths).filter((p) => p.startsWith("/console"))).toEqual([])
      const metrics = await (
        await fetch(`${f.base}/metrics`, { headers: { authorization: `Bearer ${f.scrapeToken}` } })
      ).text()
      const routes = new Set([...metrics.matchAll(/route="([^"]*)"/g)].map((m) => m[1]))
      for (const route of ["/console", "/console/console.js", "/console/console.css"]) expect(routes).toContain(route)
      expect(routes).not.toContain("unmatched")
      expect(metrics).not.toMatch(/agentplane_http_requests_total\{[^}]*status="404"/)
    })

    it("--no-console serves no console: /console is an unknown route", async () => {
      const f = off as Fixture.Fixture
      for (const path of ["/console", "/console/console.js"]) {
        const answer = await fetch(`${f.base}${path}`)
        expect([answer.status, ((await answer.json()) as { _tag: string })._tag]).toEqual([404, "NoSuchRoute"])
      }
      // The API itself is served as before.
      expect((await fetch(`${f.base}/healthz`)).status).toBe(200)
    })
  })
