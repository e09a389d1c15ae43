/**
 * On SQLite, a request waiting for another process's write lock does not freeze the server
 * (issue 33): a second process holds the lock (`BEGIN IMMEDIATE`) while a POST waits for it, and
 * `/healthz` answers meanwhile, before the lock is released; once it is, the POST is served. No
 * time is asserted: only the order of what answered. A store file deleted or replaced under the
 * running server is found before a write is acknowledged: 503 `store_gone`.
 */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process"
import { copyFileSync, mkdtempSync, renameSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, it } from "@effect/vitest"
import { Duration, Effect, Option } from "effect"
import * as SqliteBackend from "../../src/layers/SqliteBackend.js"
import { QuotaStore } from "../../src/services/QuotaStore.js"
import { assert } from "../support/Assert.js"
import * as Http from "../support/Http.js"

/** A process holding `file`'s write lock from when `held` resolves until `release` is called. */
const holdWriteLock = (file: string) => {
  const script = `
    const Database = require("better-sqlite3")
    const db = new Database(${JSON.stringify(file)})
    db.pragma("journal_mode = WAL")
    db.exec("BEGIN IMMEDIATE")
    process.stdout.write("held\\n")
    process.stdin.once("data", () => { db.exec("COMMIT"); db.close(); process.exit(0) })
  `
  const child: ChildProcessWithoutNullStreams = spawn(process.execPath, ["-e", script])
  let stderr = ""
  child.stderr.on("data", (c: Buffer) => {
    stderr += c.toString("utf8")
  })
  const held = new Promise<void>((resolve, reject) => {
    child.stdout.on("data", (c: Buffer) => {
      if (c.toString("utf8").includes("held")) resolve()
    })
    child.once("exit", (code) => reject(new Error(`the lock holder exited ${code}: ${stderr}`)))
  })
  const ended = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  return { held, release: () => child.stdin.write("go\n"), ended, kill: () => child.kill("SIGKILL") }
}

describe("SQLite under another process's write lock", () => {
  it.live("/healthz answers while a POST waits for the lock; the POST is served once it is released", () =>
    Effect.gen(function* () {
      const dir = mkdtempSync(join(tmpdir(), "busy-"))
      const file = join(dir, "plane.db")
      // Long enough that the POST is still waiting when /healthz is asked, however loaded the box.
      const stores = SqliteBackend.layer({ filename: file, busyTimeout: Duration.minutes(2) })
      yield* Http.withServer(
        (f) =>
          Effect.gen(function* () {
            const holder = holdWriteLock(file)
            try {
              yield* Effect.promise(() => holder.held)
              let postAnswered = false
              const post = fetch(`${f.baseUrl}/admin/halt`, {
                method: "PUT",
                headers: { authorization: `Bearer ${f.tokens.ada}`, "content-type": "application/json" },
                body: JSON.stringify({ reason: "drill" }),
              }).then(async (r) => {
                postAnswered = true
                return { status: r.status, text: await r.text() }
              })
              // Lets the POST reach its wait for the lock (a wait, not an assertion of time).
              yield* Effect.sleep(Duration.millis(500))
              const health = yield* Effect.promise(() => fetch(`${f.baseUrl}/healthz`))
              assert.strictEqual(health.status, 200)
              // The server answered while the POST was still waiting for the lock.
              assert.isFalse(postAnswered, "the POST ended before /healthz answered: the wait blocked the server")
              holder.release()
              const answered = yield* Effect.promise(() => post)
              assert.strictEqual(answered.status, 204, answered.text)
              assert.isTrue(Option.isSome(yield* f.inTenant(Effect.flatMap(QuotaStore, (q) => q.halted()))))
            } finally {
              holder.kill()
            }
          }),
        { stores },
      ).pipe(Effect.provide(stores), Effect.ensuring(Effect.sync(() => rmSync(dir, { recursive: true, force: true }))))
    }),
  )
})

describe("a SQLite file deleted or replaced under the server", () => {
  it.live("a write is refused 503 store_gone, never acknowledged", () =>
    Effect.gen(function* () {
      const dir = mkdtempSync(join(tmpdir(), "gone-"))
      const file = join(dir, "plane.db")
      const stores = SqliteBackend.layer({ filename: file })
      yield* Http.withServer(
        (f) =>
          Effect.gen(function* () {
            const halt = (reason: string) =>
              f.raw("PUT", "/admin/halt", {
                as: "ada",
                headers: { "content-type": "application/json" },
                body: JSON.stringify({ reason }),
              })
            const unhalt = () => f.raw("DELETE", "/admin/halt", { as: "ada" })
            assert.strictEqual((yield* halt("before")).status, 204)
            assert.strictEqual((yield* unhalt()).status, 204)
            // Replaced: another file (a restored backup, say) now has the path.
            copyFileSync(file, join(dir, "copy.db"))
            renameSync(join(dir, "copy.db"), file)
            const replaced = yield* halt("after a replace")
            assert.strictEqual(replaced.status, 503, replaced.text)
            assert.deepStrictEqual((replaced.json as { reason: string }).reason, "store_gone")
            // Deleted.
            rmSync(file)
            const deleted = yield* halt("after a delete")
            assert.strictEqual(deleted.status, 503, deleted.text)
            assert.deepStrictEqual((deleted.json as { reason: string }).reason, "store_gone")
          }),
        { stores },
      ).pipe(Effect.provide(stores), Effect.ensuring(Effect.sync(() => rmSync(dir, { recursive: true, force: true }))))
    }),
  )
})
