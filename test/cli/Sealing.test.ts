/**
 * The key ring as an operator configures it (§9.1, `src/cli/Keys.ts`), through real processes on
 * each backend: `seed-demo` and `serve` given `--kek-file` seal payloads at rest (the raw rows
 * hold no plaintext) and `serve` reads them back in clear through the API; `drill` with the KEK
 * finds the case's key present; the sealed store opened with no KEK or another KEK is refused
 * with a message naming the fix, and a malformed KEK file is refused before anything opens.
 */
import { randomBytes, randomUUID } from "node:crypto"
import { existsSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, describe, it } from "vitest"
import * as Sealed from "../../src/erasure/Sealed.js"
import { assert } from "../support/Assert.js"
import { cleanUp, cli, lines, postgres, refusedServe, scratchFile, serve, sqlite } from "../support/Cli.js"
import { rawText } from "../support/RawRows.js"

afterAll(cleanUp)

const tokens = join("examples", "demo-tokens.json")
const policy = join("examples", "demo-policy")

const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

for (const backend of [sqlite, postgres]) {
  describe(`a key ring from --kek-file (${backend.name})`, () => {
    it("seals payloads at rest, reads them in clear over HTTP, and refuses the sealed store without its KEK", {
      timeout: 300_000,
    }, async () => {
      const { store, drop } = await backend.make()
      try {
        const kekFile = scratchFile("kek")
        writeFileSync(kekFile, `${randomBytes(32).toString("base64")}\n`)
        const keyed = ["--store", store, "--kek-file", kekFile]

        // A malformed KEK is refused before the store opens: no SQLite file appears.
        const badKek = scratchFile("bad-kek")
        writeFileSync(badKek, "aGVsbG8=\n")
        const bad = await cli(["seed-demo", "--store", store, "--kek-file", badKek])
        assert.strictEqual(bad.code, 1, bad.stdout)
        assert.match(bad.stderr, /^agentplane: key-encryption key: the KEK file .* decodes to 5 bytes; give exactly 32/)
        if (backend.name === "sqlite") assert.isFalse(existsSync(store))

        const seeded = await cli(["seed-demo", ...keyed])
        assert.strictEqual(seeded.code, 0, seeded.stderr)
        const task = /TASK=(\S+)/.exec(seeded.stdout)?.[1] ?? ""

        const server = serve([...keyed, "--addr", "127.0.0.1:0", "--tokens", tokens, "--policy", policy])
        const secret = `card ending ${randomUUID()}`
        try {
          const base = await server.address
          // Sealed by seed-demo, opened by serve under the same KEK.
          const read = await fetch(`${base}/tasks/${task}`, { headers: bearer("demo-reviewer-token") })
          assert.strictEqual(read.status, 200)
          const body = (await read.json()) as { justification: { summary: string; evidence: Array<string> } }
          assert.match(body.justification.summary, /the customer was charged twice/)
          assert.deepStrictEqual(body.justification.evidence, ["two captured payments for one order"])
          const posted = await fetch(`${base}/events`, {
            method: "POST",
            headers: { ...bearer("demo-agent-token"), "content-type": "application/json" },
            body: JSON.stringify({
              id: `pay-${randomUUID()}`,
              kind: "payment.captured",
              correlation: [{ namespace: "invoice", value: "INV-2026-0042" }],
              payload: { note: secret },
            }),
          })
          assert.strictEqual(posted.status, 202, await posted.text())
        } finally {
          server.child.kill("SIGTERM")
        }
        assert.strictEqual((await server.done).code, 0, server.stderr())

        // At rest: neither the task's justification nor the event's payload is in any row.
        const raw = await rawText(store, ["tasks", "inbound_events", "cases", "key_ring"])
        for (const plain of ["charged twice", "two captured payments", secret])
          assert.isFalse(raw.includes(plain), plain)
        assert.isTrue(raw.includes(Sealed.PREFIX))

        // With the KEK and the key ring in the store, drill finds the case's key live.
        const drilled = await cli(["drill", ...keyed, "--blobs", "store"])
        assert.strictEqual(drilled.code, 0, drilled.stderr)
        assert.deepStrictEqual(
          lines(drilled.stdout).find((l) => l.kind === "agentplane.drill.summary"),
          { kind: "agentplane.drill.summary", cases: 1, present: 1, erased: 0, findings: 0 },
        )

        // Without a KEK, serve is refused before it listens, naming the fix.
        const bare = await refusedServe([
          "--store",
          store,
          "--addr",
          "127.0.0.1:0",
          "--tokens",
          tokens,
          "--policy",
          policy,
        ])
        assert.strictEqual(bare.code, 1, bare.stdout)
        assert.match(
          bare.stderr,
          /^agentplane: store .* holds payloads sealed under KEK [0-9a-f]{16}, but no KEK was given: set AGENTPLANE_KEK or --kek-file/,
        )
        assert.isFalse(bare.stdout.includes("agentplane serving"))
        // Under another KEK (from the environment), a sweep is refused too.
        const other = await cli(["sweep", "--store", store], { AGENTPLANE_KEK: randomBytes(32).toString("base64") })
        assert.strictEqual(other.code, 1, other.stdout)
        assert.match(other.stderr, /is sealed under KEK [0-9a-f]{16}, but the KEK given .* is [0-9a-f]{16}/)
      } finally {
        await drop()
      }
    })
  })
}
