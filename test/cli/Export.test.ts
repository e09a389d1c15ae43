/**
 * `agentplane export` as a real process on each backend: the file it writes is the export the
 * library streams, standard output gets the same bytes, a pipe shows no progress, a terminal
 * shows counts and a rate, and `--quiet` silences it.
 */
import { spawn } from "node:child_process"
import { readFileSync } from "node:fs"
import { Effect } from "effect"
import { afterAll, describe, it } from "vitest"
import * as Export from "../../src/archive/Export.js"
import * as Tenant from "../../src/domain/Tenant.js"
import * as Cli from "../archive/Cli.js"
import { as, exportLines, seed } from "../archive/Support.js"
import { assert } from "../support/Assert.js"
import { env } from "../support/Cli.js"

afterAll(Cli.cleanUp)

for (const backend of [Cli.sqlite, Cli.postgres]) {
  describe(backend.name, () => {
    it("writes the tenant's export to --out and to standard output, with no progress in a pipe", async () => {
      const { store, layer, drop } = await backend.make()
      try {
        const tenant = Tenant.TenantId.make("acme")
        // A long run of exactly one record page: the read after it is empty, and must not become a blank line.
        await Effect.runPromise(seed(Export.RECORD_PAGE).pipe(as(tenant), Effect.provide(layer)))
        const expected = await Effect.runPromise(exportLines.pipe(as(tenant), Effect.provide(layer)))
        const out = Cli.scratchFile("export.jsonl")
        const toFile = await Cli.cli(["export", "--store", store, "--tenant", "acme", "--out", out])
        assert.deepStrictEqual(
          { code: toFile.code, stdout: toFile.stdout, stderr: toFile.stderr },
          { code: 0, stdout: "", stderr: "" },
        )
        assert.strictEqual(readFileSync(out, "utf8"), `${expected.join("\n")}\n`)
        const toStdout = await Cli.cli(["export", "--tenant", "acme"], { AGENTPLANE_STORE: store })
        assert.strictEqual(toStdout.code, 0, toStdout.stderr)
        assert.strictEqual(toStdout.stdout, `${expected.join("\n")}\n`)
      } finally {
        await drop()
      }
    })
  })
}

describe("progress", () => {
  it("a terminal sees counts and a rate on standard error; --quiet and a pipe see none", async () => {
    const { store, layer } = await Cli.sqlite.make()
    await Effect.runPromise(seed(40).pipe(as(Tenant.DEFAULT), Effect.provide(layer)))
    const out = Cli.scratchFile("export.jsonl")
    const shown = await Cli.onTerminal(["export", "--store", store, "--out", out])
    assert.strictEqual(shown.code, 0, shown.stderr)
    assert.isTrue(/export: 47 records, 2 cases, \d+ records\/s/.test(shown.stdout), JSON.stringify(shown.stdout))
    const quiet = await Cli.onTerminal(["export", "--store", store, "--out", out, "--quiet"])
    assert.strictEqual(quiet.code, 0, quiet.stderr)
    assert.isFalse(quiet.stdout.includes("records/s"), JSON.stringify(quiet.stdout))
  })
})

describe("a reader that stops early", () => {
  it("export | head -1: export stops quietly with 141 (as a shell reports SIGPIPE), no error text", {
    timeout: 120_000,
  }, async () => {
    const { store, layer, drop } = await Cli.sqlite.make()
    try {
      // Far more than a pipe's buffer, so export is still writing when head has gone.
      await Effect.runPromise(seed(4_000).pipe(as(Tenant.TenantId.make("acme")), Effect.provide(layer)))
      const child = spawn(
        "bash",
        ["-c", `set -o pipefail; node --import tsx src/cli/Main.ts export --store '${store}' --tenant acme | head -1`],
        { env: env() as NodeJS.ProcessEnv },
      )
      let stdout = ""
      let stderr = ""
      child.stdout.on("data", (c: Buffer) => {
        stdout += c.toString("utf8")
      })
      child.stderr.on("data", (c: Buffer) => {
        stderr += c.toString("utf8")
      })
      const code = await new Promise<number | null>((resolve) => child.once("exit", resolve))
      assert.strictEqual(code, 141, stderr)
      assert.strictEqual(stderr, "")
      assert.match(stdout, /^\{[^\n]*"kind":"agentplane\.export\.header"[^\n]*\n$/)
    } finally {
      await drop()
    }
  })
})
