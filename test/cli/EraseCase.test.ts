/**
 * `agentplane erase-case` as an operator runs it, real processes on a SQLite store sealed by
 * `seed-demo`: the erasure destroys the case's key, so drill then finds it erased by design and
 * serve answers the task's justification sealed; a re-run succeeds and expires nothing; an unknown
 * case and a sealed store without its KEK are refused. On a store with no key ring the erasure is
 * refused (exit 2, nothing changed) unless `--blobs-only` asks for the blobs alone, and then the
 * report says the payloads were not sealed. (Kills inside an erasure: EraseKill.test.ts.)
 */
import { randomBytes } from "node:crypto"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, describe, it } from "vitest"
import * as Sealed from "../../src/erasure/Sealed.js"
import { assert } from "../support/Assert.js"
import { cleanUp, cli, lines, scratchFile, serve, sqlite } from "../support/Cli.js"

afterAll(cleanUp)

describe("agentplane erase-case", () => {
  it("destroys the case's key, is re-runnable, and refuses an unknown case or a missing KEK", {
    timeout: 300_000,
  }, async () => {
    const { store } = await sqlite.make()
    const kekFile = scratchFile("kek")
    writeFileSync(kekFile, randomBytes(32).toString("base64"))
    const keyed = ["--store", store, "--kek-file", kekFile, "--blobs", "store"]
    const seeded = await cli(["seed-demo", "--store", store, "--kek-file", kekFile])
    assert.strictEqual(seeded.code, 0, seeded.stderr)
    const kase = /CASE=(\S+)/.exec(seeded.stdout)?.[1] ?? ""
    const task = /TASK=(\S+)/.exec(seeded.stdout)?.[1] ?? ""

    const erased = await cli(["erase-case", ...keyed, "--case", kase, "--reason", "ticket 7"])
    assert.strictEqual(erased.code, 0, erased.stderr)
    const done = lines(erased.stdout)[0]
    assert.deepStrictEqual(
      [done?.kind, done?.case, done?.expired, done?.keysDestroyed],
      ["agentplane.erase.done", kase, 0, true],
    )

    const drilled = await cli(["drill", ...keyed])
    assert.strictEqual(drilled.code, 0, drilled.stderr)
    const key = lines(drilled.stdout).find((l) => l.artifact === "key")
    assert.deepStrictEqual([key?.case, key?.verdict], [kase, "erased"])
    assert.match(String(key?.detail), /destroyed at \d+ \(ticket 7\)/)

    // The task still reads, its content gone: the justification is the sealed text.
    const server = serve([
      ...keyed.slice(0, 4),
      "--addr",
      "127.0.0.1:0",
      "--tokens",
      join("examples", "demo-tokens.json"),
      "--policy",
      join("examples", "demo-policy"),
    ])
    try {
      const base = await server.address
      const read = await fetch(`${base}/tasks/${task}`, { headers: { authorization: "Bearer demo-reviewer-token" } })
      assert.strictEqual(read.status, 200)
      const body = (await read.json()) as { justification: { summary: string; cost: string | null } }
      assert.isTrue(Sealed.isSealed(body.justification.summary), body.justification.summary)
      // The cost is money: sealed and erased with the rest.
      assert.isTrue(Sealed.isSealed(body.justification.cost), String(body.justification.cost))
    } finally {
      server.child.kill("SIGTERM")
    }
    const ended = await server.done
    assert.strictEqual(ended.code, 0, ended.stderr)

    const again = await cli(["erase-case", ...keyed, "--case", kase, "--reason", "again"])
    assert.strictEqual(again.code, 0, again.stderr)
    assert.strictEqual(lines(again.stdout)[0]?.expired, 0)

    const unknown = await cli(["erase-case", ...keyed, "--case", "case_00000000000000000000000000", "--reason", "x"])
    assert.strictEqual(unknown.code, 1, unknown.stdout + unknown.stderr)
    assert.match(unknown.stderr, /^agentplane: not found: case_0{26}/)

    const bare = await cli(["erase-case", "--store", store, "--case", kase, "--reason", "no key"])
    assert.strictEqual(bare.code, 1, bare.stdout + bare.stderr)
    assert.match(bare.stderr, /holds payloads sealed under KEK [0-9a-f]{16}, but no KEK was given/)
  })
})

describe("agentplane erase-case without a key ring", () => {
  it("is refused, exit 2, naming what stays readable, and changes nothing; --blobs-only says payloadsSealed false", {
    timeout: 300_000,
  }, async () => {
    const { store } = await sqlite.make()
    const seeded = await cli(["seed-demo", "--store", store])
    assert.strictEqual(seeded.code, 0, seeded.stderr)
    const kase = /CASE=(\S+)/.exec(seeded.stdout)?.[1] ?? ""
    const task = /TASK=(\S+)/.exec(seeded.stdout)?.[1] ?? ""
    const read = async () => {
      const server = serve([
        "--store",
        store,
        "--addr",
        "127.0.0.1:0",
        "--tokens",
        join("examples", "demo-tokens.json"),
        "--policy",
        join("examples", "demo-policy"),
      ])
      try {
        const base = await server.address
        const answer = await fetch(`${base}/tasks/${task}`, {
          headers: { authorization: "Bearer demo-reviewer-token" },
        })
        assert.strictEqual(answer.status, 200)
        return (await answer.json()) as { justification: { summary: string } }
      } finally {
        server.child.kill("SIGTERM")
        await server.done
      }
    }
    const before = await read()
    assert.match(before.justification.summary, /^Refund 40 EUR/)

    const refused = await cli(["erase-case", "--store", store, "--case", kase, "--reason", "ticket 8"])
    assert.strictEqual(refused.code, 2, refused.stdout + refused.stderr)
    assert.strictEqual(refused.stdout, "")
    assert.match(refused.stderr, /no key ring.*would stay readable.*erasure removed nothing.*--blobs-only/)
    assert.deepStrictEqual(await read(), before)
    const drilled = await cli(["drill", "--store", store, "--blobs", "store"])
    assert.strictEqual(drilled.code, 0, drilled.stderr)
    assert.isFalse(
      lines(drilled.stdout).some((l) => l.verdict === "erased"),
      drilled.stdout,
    )

    const blobsOnly = await cli(["erase-case", "--store", store, "--case", kase, "--reason", "t", "--blobs-only"])
    assert.strictEqual(blobsOnly.code, 0, blobsOnly.stderr)
    const done = lines(blobsOnly.stdout)[0]
    assert.deepStrictEqual(
      [done?.kind, done?.payloadsSealed, done?.keysDestroyed],
      ["agentplane.erase.done", false, false],
    )
  })
})
