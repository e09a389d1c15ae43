/**
 * The Quickstart's main job, `npm start`, stops as a process manager stops it. SIGTERM goes to the
 * one pid that was started, npm's (what `kill $!`, Docker or systemd send): the server must stop
 * cleanly and free its port, not be orphaned still serving while the wrapper exits. The script
 * `exec`s node, so npm's own signal forwarding reaches the server; without the `exec`, npm's
 * shell takes the signal and dies, and node keeps serving with init as its parent.
 * Ctrl-C in a terminal signals the whole process group instead; that stops it cleanly too.
 * Runs the built JavaScript (`npm run build`; `npm test` builds first).
 */
import { randomUUID } from "node:crypto"
import { join } from "node:path"
import { beforeAll, describe, inject, it } from "vitest"
import { assert } from "../support/Assert.js"
import * as Process from "./Process.js"

/** `npm start` in the repository, on a free port and a scratch SQLite file, through its variables. */
const npmStart = async () => {
  const port = await Process.freePort()
  const server = Process.start("npm", ["start"], {
    cwd: Process.ROOT,
    env: {
      AGENTPLANE_ADDR: `127.0.0.1:${port}`,
      AGENTPLANE_STORE: join(inject("scratchDir"), `start-${randomUUID()}.db`),
    },
  })
  const url = await Process.listening(server)
  assert.strictEqual(url, `http://127.0.0.1:${port}`)
  assert.strictEqual((await fetch(`${url}/healthz`)).status, 200)
  return { server, port }
}

describe("npm start", { timeout: 180_000 }, () => {
  beforeAll(() => Process.assertBuilt())

  it("stops cleanly on SIGTERM to npm's pid alone, and frees the port", async () => {
    const { server, port } = await npmStart()
    try {
      Process.signal(server, "SIGTERM")
      assert.strictEqual(await Process.finish(server, 30_000), 0, server.stderr())
      // npm has exited; nothing it started may outlive it.
      await Process.groupGone(server)
      assert.match(server.stdout(), /agentplane stopping[^\n]*\nagentplane stopped\n/)
      assert.isTrue(await Process.portFree(port), "the port is free again")
    } finally {
      Process.killGroup(server, "SIGKILL")
    }
  })

  it("stops cleanly on Ctrl-C (SIGINT to the process group), and frees the port", async () => {
    const { server, port } = await npmStart()
    try {
      Process.killGroup(server, "SIGINT")
      await Process.groupGone(server)
      assert.match(server.stdout(), /agentplane stopped\n/)
      assert.isFalse(server.stderr().includes("agentplane:"), `no failure reported: ${server.stderr()}`)
      assert.isTrue(await Process.portFree(port), "the port is free again")
    } finally {
      Process.killGroup(server, "SIGKILL")
    }
  })
})
