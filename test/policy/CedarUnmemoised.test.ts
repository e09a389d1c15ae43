/**
 * The crash `policy/CedarBindings` memoises against, tried again: cedar-wasm loaded around the
 * module cache (a fresh WebAssembly instance per load) and the instances called in turn, in a
 * child process so that a crash in V8 fails this test instead of ending the run. On the version
 * installed it completes; the loader's comment names that version, so an upgrade fails here
 * until someone has run this again and said what they found there.
 */
import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import { describe, expect, it } from "vitest"
import { startScript } from "../support/Cli.js"

const entry = createRequire(import.meta.url).resolve("@cedar-policy/cedar-wasm/nodejs")
const installed = (JSON.parse(readFileSync(join(dirname(entry), "..", "package.json"), "utf8")) as { version: string })
  .version

describe("cedar-wasm without the memo", () => {
  it("fresh instances called in turn in a loop complete in a child process, on the version the loader names", {
    timeout: 120_000,
  }, async () => {
    const loads = 4
    const rounds = 100
    const done = await startScript("test/policy/CedarUnmemoisedChild.ts", [String(loads), String(rounds)]).done
    expect([done.code, done.signal], done.stderr).toEqual([0, null])
    const report = JSON.parse(done.stdout.trim()) as Record<string, unknown>
    expect(report).toEqual({ version: installed, cedar: installed, loads, rounds, calls: rounds * (loads * 6 + 1) })
    const comment = readFileSync(join(import.meta.dirname, "..", "..", "src", "policy", "CedarBindings.ts"), "utf8")
    expect(comment).toContain(`On ${installed}, the version installed`)
  })
})
