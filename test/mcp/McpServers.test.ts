/**
 * `McpServers` against real servers over stdio (§7.14): tools listed with their annotations,
 * tools called, a tool's error and an unknown server as typed errors naming server and tool, a
 * killed server restarted by the next call, and every connection closed with the scope.
 */
import { describe, it } from "@effect/vitest"
import { Effect, Fiber, Option, Schedule } from "effect"
import { expect } from "vitest"
import * as Run from "../../src/domain/Run.js"
import * as McpServers from "../../src/mcp/McpServers.js"
import * as ToolRecovery from "../../src/mcp/ToolRecovery.js"
import * as Servers from "./Servers.js"

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

const pidOf = (servers: McpServers.Service, name: string) =>
  Effect.map(servers.health, (all) => Option.getOrThrow(all.find((h) => h.server === name)?.pid ?? Option.none()))

describe("McpServers", () => {
  it.live("lists a server's tools with their annotations and calls them", () =>
    Effect.gen(function* () {
      const servers = yield* McpServers.make([Servers.everything()])
      const tools = yield* servers.tools("everything")
      expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(["echo", "get-sum"]))
      // Listed when the layer was built: read back without asking the server.
      expect(Option.map(servers.describe("everything", "echo"), (t) => t.annotations?.readOnlyHint)).toEqual(
        Option.some(true),
      )
      const echo = yield* servers.call("everything", "echo", { message: "hello" }, {})
      expect(echo).toEqual({ content: [{ type: "text", text: "Echo: hello" }], structured: null })
      const sum = yield* servers.call("everything", "get-sum", { a: 2, b: 3 }, {})
      expect(JSON.stringify(sum.content)).toContain("5")
    }).pipe(Effect.scoped),
  )

  it.live("a tool's error result and an unknown server are typed errors naming the server and tool", () =>
    Effect.gen(function* () {
      const servers = yield* McpServers.make([Servers.everything()])
      const failed = yield* Effect.flip(servers.call("everything", "no-such-tool", {}, {}))
      expect(failed._tag).toBe("McpToolFailed")
      expect([failed.server, failed.tool]).toEqual(["everything", "no-such-tool"])
      expect(failed.message).toContain("no-such-tool")
      const unknown = yield* Effect.flip(servers.call("elsewhere", "echo", {}, {}))
      expect(unknown._tag).toBe("McpUnknownServer")
      expect(unknown.message).toBe("MCP server elsewhere is not configured (tool echo)")
      expect(servers.describe("elsewhere", "echo")).toEqual(Option.none())
    }).pipe(Effect.scoped),
  )

  it.live("a killed stdio server is started again by the next call, which succeeds", () =>
    Effect.gen(function* () {
      const servers = yield* McpServers.make([Servers.everything()])
      const first = yield* pidOf(servers, "everything")
      process.kill(first, "SIGKILL")
      // The transport sees the child exit; wait for that rather than racing it.
      yield* Effect.repeat(servers.health, {
        until: (all) => all.every((h) => !h.connected),
        schedule: Schedule.spaced("20 millis"),
      }).pipe(Effect.timeout("5 seconds"), Effect.ignore)
      const echo = yield* servers.call("everything", "echo", { message: "again" }, {})
      expect(echo.content).toEqual([{ type: "text", text: "Echo: again" }])
      const [health] = yield* servers.health
      expect(health?.connected).toBe(true)
      expect(health?.connects).toBe(2)
      expect(Option.getOrThrow(health?.pid ?? Option.none())).not.toBe(first)
    }).pipe(Effect.scoped),
  )

  it.live("a server killed while a call is out loses that call in doubt (McpCallLost), not as a refusal", () =>
    Effect.gen(function* () {
      const servers = yield* McpServers.make([Servers.everything()])
      const pid = yield* pidOf(servers, "everything")
      const call = yield* Effect.fork(
        servers.call("everything", "trigger-long-running-operation", { duration: 10, steps: 2 }, {}),
      )
      yield* Effect.sleep("300 millis")
      process.kill(pid, "SIGKILL")
      const lost = yield* Effect.flip(Fiber.join(call))
      expect(lost._tag).toBe("McpCallLost")
      expect([lost.server, lost.tool]).toEqual(["everything", "trigger-long-running-operation"])
    }).pipe(Effect.scoped),
  )

  it.live("closes every connection when its scope ends: the server's process exits", () =>
    Effect.gen(function* () {
      const pid = yield* Effect.scoped(
        Effect.flatMap(McpServers.make([Servers.everything()]), (servers) => pidOf(servers, "everything")),
      )
      yield* Effect.repeat(
        Effect.sync(() => alive(pid)),
        { until: (a) => !a, schedule: Schedule.spaced("20 millis") },
      ).pipe(Effect.timeout("5 seconds"), Effect.ignore)
      expect(alive(pid)).toBe(false)
    }),
  )

  it.live("a server that cannot start does not stop the others; its calls fail McpUnavailable", () =>
    Effect.gen(function* () {
      const broken = Servers.everything("broken")
      const servers = yield* McpServers.make(
        [Servers.everything(), { ...broken, args: ["/nonexistent/agentplane-mcp-entry.js"] } as typeof broken],
        { connectTries: 2, connectBackoff: "10 millis" },
      )
      const lost = yield* Effect.flip(servers.call("broken", "echo", {}, {}))
      expect(lost._tag).toBe("McpUnavailable")
      expect(lost.message).toContain("MCP server broken is unavailable for tool echo")
      expect((yield* servers.call("everything", "echo", { message: "x" }, {})).content).toHaveLength(1)
    }).pipe(Effect.scoped),
  )
})

describe("ToolRecovery.fromHints", () => {
  it("readOnlyHint is a read retried; idempotentHint a mutation with a key; anything else goes to an operator", () => {
    expect(ToolRecovery.fromHints({ readOnlyHint: true, idempotentHint: false })).toEqual({
      mutates: false,
      recovery: Run.Recovery.Retry(),
    })
    expect(ToolRecovery.fromHints({ readOnlyHint: false, idempotentHint: true })).toEqual({
      mutates: true,
      recovery: Run.Recovery.Idempotent({ key: Option.none() }),
    })
    for (const hints of [undefined, {}, { readOnlyHint: false, idempotentHint: false }]) {
      expect(ToolRecovery.fromHints(hints)).toEqual({ mutates: true, recovery: Run.Recovery.RequiresOperator() })
    }
  })
})
