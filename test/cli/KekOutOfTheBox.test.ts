/**
 * `serve` on a fresh SQLite store seals out of the box (`Keys.outOfTheBox`), real processes: the
 * first start writes `<store>.kek` (mode 0600) and names it in its startup line, later starts and
 * every other verb reuse it without a flag, so `erase-case` then leaves the case's payloads
 * unreadable through the API. The demo, an in-process user of the embedded default
 * (`SqliteBackend.layerConfig`), seals on that store too instead of writing beside it in the
 * clear. `--no-kek` keeps payloads in the clear and writes no file.
 */
import { existsSync, readFileSync, statSync } from "node:fs"
import { join } from "node:path"
import { afterAll, describe, it } from "vitest"
import * as Sealed from "../../src/erasure/Sealed.js"
import { assert } from "../support/Assert.js"
import { cleanUp, cli, scratchFile, serve, startScript } from "../support/Cli.js"
import { rawText } from "../support/RawRows.js"

afterAll(cleanUp)

const demo = (store: string) => [
  "--tokens",
  join("examples", "demo-tokens.json"),
  "--policy",
  join("examples", "demo-policy"),
  "--store",
  store,
  "--addr",
  "127.0.0.1:0",
]

/** Starts `serve`, gives its startup line and the task's justification as the API answers it, and stops it. */
const startAndRead = async (args: ReadonlyArray<string>, task?: string) => {
  const server = serve(args)
  try {
    const base = await server.address
    const line =
      server
        .stdout()
        .split("\n")
        .find((l) => l.startsWith("agentplane serving")) ?? ""
    if (task === undefined) return { line, justification: undefined }
    const read = await fetch(`${base}/tasks/${task}`, { headers: { authorization: "Bearer demo-reviewer-token" } })
    assert.strictEqual(read.status, 200)
    const body = (await read.json()) as { justification: { summary: string; cost: string | null } }
    return { line, justification: body.justification }
  } finally {
    server.child.kill("SIGTERM")
    assert.strictEqual((await server.done).code, 0, server.stderr())
  }
}

describe("serve on a fresh SQLite store", () => {
  it("writes a KEK file beside it (0600, named at start), reuses it, and erase-case then erases through it", {
    timeout: 300_000,
  }, async () => {
    const store = scratchFile("kek-box.db")
    const kekFile = `${store}.kek`
    const first = await startAndRead(demo(store))
    assert.isTrue(first.line.includes(`payloads sealed under the KEK file ${kekFile}, new`), first.line)
    assert.strictEqual(statSync(kekFile).mode & 0o777, 0o600)
    const kek = readFileSync(kekFile, "utf8")

    // Another verb given no KEK finds the file beside the store.
    const seeded = await cli(["seed-demo", "--store", store])
    assert.strictEqual(seeded.code, 0, seeded.stderr)
    const kase = /CASE=(\S+)/.exec(seeded.stdout)?.[1] ?? ""
    const task = /TASK=(\S+)/.exec(seeded.stdout)?.[1] ?? ""
    const raw = await rawText(store, ["tasks"])
    assert.isFalse(raw.includes("Refund 40 EUR"), "the justification is sealed at rest")

    const second = await startAndRead(demo(store), task)
    assert.isTrue(second.line.includes(`payloads sealed under the KEK file ${kekFile})`), second.line)
    assert.strictEqual(readFileSync(kekFile, "utf8"), kek, "the second start reuses the file")
    assert.match(second.justification?.summary ?? "", /^Refund 40 EUR/)

    const erased = await cli(["erase-case", "--store", store, "--blobs", "store", "--case", kase, "--reason", "t 9"])
    assert.strictEqual(erased.code, 0, erased.stderr)
    assert.isTrue(erased.stdout.includes('"payloadsSealed":true'), erased.stdout)

    const after = await startAndRead(demo(store), task)
    assert.isTrue(Sealed.isSealed(after.justification?.summary), String(after.justification?.summary))
    assert.isTrue(Sealed.isSealed(after.justification?.cost), String(after.justification?.cost))
  })

  it("lets the demo open the sealed store with the KEK beside it, sealing what it writes", {
    timeout: 300_000,
  }, async () => {
    const store = scratchFile("kek-demo.db")
    await startAndRead(demo(store))
    const run = startScript("src/demo/Demo.ts", [], { AGENTPLANE_STORE: store })
    const done = await run.done
    assert.strictEqual(done.code, 0, done.stderr)
    assert.match(done.stdout, /: Succeeded/)
    const raw = await rawText(store, ["journal", "cases"])
    assert.isFalse(raw.includes("charged twice for one order"), "the demo's input is sealed at rest")
    assert.isTrue(raw.includes(Sealed.PREFIX))
  })

  it("with --no-kek writes no KEK file and says payloads are in the clear", { timeout: 120_000 }, async () => {
    const store = scratchFile("kek-none.db")
    const started = await startAndRead([...demo(store), "--no-kek"])
    assert.isTrue(started.line.includes("payloads in the clear"), started.line)
    assert.isFalse(existsSync(`${store}.kek`))
  })
})
