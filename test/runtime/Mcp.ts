/**
 * §7.14 MCP tool calls in runs, on every backend, against real servers over stdio: a call is a
 * journaled effect `mcp:<server>/<tool>` with the recovery its annotations give; Strict replay and
 * Resume answer it from the journal with the server gone; a Cedar forbid refuses it before the
 * server hears of it; its answer is untrusted with provenance `mcp:<server>/<tool>`; a mutating
 * tool left in doubt by a crash goes to an operator and acted once.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, it } from "@effect/vitest"
import { Effect, Either, Layer, Option, Schema } from "effect"
import { expect } from "vitest"
import type { Json } from "../../src/domain/Json.js"
import * as Run from "../../src/domain/Run.js"
import * as PolicyEngineCedar from "../../src/layers/PolicyEngineCedar.js"
import * as McpCall from "../../src/mcp/McpCall.js"
import * as McpServers from "../../src/mcp/McpServers.js"
import type * as ServerConfig from "../../src/mcp/ServerConfig.js"
import * as Bundle from "../../src/policy/Bundle.js"
import type { CrashPoint } from "../../src/runtime/Execution.js"
import * as RunDefinition from "../../src/runtime/RunDefinition.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import * as Step from "../../src/runtime/Step.js"
import * as PolicyEngine from "../../src/services/PolicyEngine.js"
import * as TestRuntime from "../../src/testing/TestRuntime.js"
import * as Servers from "../mcp/Servers.js"
import * as Backend from "../support/Backend.js"
import * as Support from "./Support.js"

/** One call of the plan: a tool of a server with its arguments. */
interface Call {
  readonly server: string
  readonly tool: string
  readonly args: Readonly<Record<string, Json>>
  readonly options?: McpCall.Options
}

/**
 * A step performing `calls` in order, answering each answer's first text (a refusal as
 * `denied: <action>`); then a step that fails while `failing.value`, so a run can be left open
 * after its calls and resumed. A tool's error result is answered `failed: <server>/<tool>`.
 */
const calling = (capability: string, calls: ReadonlyArray<Call>, failing = { value: false }) => {
  const work = Step.make({
    name: "work",
    role: Step.Unnecessary,
    body: (_input: { readonly n: number }) =>
      Effect.gen(function* () {
        const texts: Array<string> = []
        for (const c of calls) {
          const text = yield* McpCall.call(c.server, c.tool, c.args, c.options).pipe(
            Effect.map((a) => String((a.content[0] as { readonly text?: unknown } | undefined)?.text)),
            Effect.catchTags({
              PolicyDenied: (d) => Effect.succeed(`denied: ${d.action}`),
              McpToolFailed: (f) => Effect.succeed(`failed: ${f.server}/${f.tool}`),
            }),
          )
          texts.push(text)
        }
        return texts
      }),
  })
  const finish = Step.make({
    name: "finish",
    role: Step.Unnecessary,
    body: (_input: { readonly n: number }, prior) =>
      failing.value ? Effect.fail("not yet") : Effect.succeed(prior.of(work)),
  })
  return RunDefinition.make({
    capability,
    input: Schema.Struct({ n: Schema.Number }),
    output: Schema.Array(Schema.String),
    plan: [work, finish],
  })
}

const SCHEMA = `
action "mcp:everything/echo", "mcp:fs/write_file", "mcp:fs/edit_file", "mcp:fs/read_text_file"
  in [Agentplane::Action::"effect"] appliesTo {
  principal: Agentplane::Agent,
  resource: [Agentplane::Case, Agentplane::Run],
  context: Agentplane::EffectContext,
};
`

const cedar = (policies: string) =>
  Layer.succeed(
    PolicyEngine.PolicyEngine,
    Either.match(PolicyEngineCedar.load(Bundle.make("mcp-policy", [{ name: "mcp.cedar", text: policies }], [SCHEMA])), {
      onLeft: (e) => {
        throw new Error(e.message)
      },
      onRight: PolicyEngineCedar.engine,
    }),
  )

const rt = Effect.flatMap(Runtime.Runtime, Effect.succeed)

export const suite = (backend: Backend.Backend) =>
  describe("MCP tools (§7.14)", () => {
    /** A runtime with `def` registered, its steps given `servers`. */
    const over = (def: RunDefinition.Any, servers: Layer.Layer<McpServers.McpServers>, options: Support.Options = {}) =>
      Support.on(Support.runtime(backend, [def], options, servers))
    const admit = (def: RunDefinition.Any, label = "test") =>
      Effect.flatMap(rt, (r) => r.run(def, Run.labeled({ n: 1 }, label)))
    /** Started in the test's scope, so the test decides when the servers go away. */
    const started = (configs: ReadonlyArray<ServerConfig.ServerConfig>) =>
      Effect.map(McpServers.make(configs), (s) => Layer.succeed(McpServers.McpServers, s))
    const notConfigured = McpServers.layer([])

    it.live(
      "a call is journaled as mcp:<server>/<tool>, a read by its annotations; Strict replay and Resume answer it with no server",
      () => {
        const failing = { value: true }
        const def = calling("mcp.echo", [{ server: "everything", tool: "echo", args: { message: "hi" } }], failing)
        return Effect.gen(function* () {
          const first = yield* Effect.scoped(
            Effect.flatMap(started([Servers.everything()]), (servers) => over(def, servers)(admit(def))),
          )
          expect(first.status._tag).toBe("Failed")
          const records = yield* Effect.provide(Support.journalOf(first.run), backend.layer)
          const announced = Support.ofKind(records, "EffectStarted").map((r) => [
            (r.kind.descriptor as { readonly kind: string }).kind,
            r.kind.recovery,
            r.kind.mutates,
          ])
          expect(announced).toEqual([["mcp:everything/echo", "retry", false]])
          const done = Support.ofKind(records, "EffectDone").map((r) => r.kind.output)
          expect(done).toEqual([{ content: [{ type: "text", text: "Echo: hi" }], structured: null }])
          // The servers are closed now, and these runtimes have none configured.
          const report = yield* over(def, notConfigured)(Effect.flatMap(rt, (r) => r.replay(first.run)))
          expect([report.reproduced, report.divergence]).toEqual([true, Option.none()])
          failing.value = false
          const resumed = yield* over(def, notConfigured)(Effect.flatMap(rt, (r) => r.resume(first.run)))
          expect(resumed.status).toEqual(Run.RunStatus.Succeeded({ output: ["Echo: hi"] }))
          const after = yield* Effect.provide(Support.journalOf(first.run), backend.layer)
          expect(Support.ofKind(after, "EffectStarted")).toHaveLength(1)
        }).pipe(Backend.asFreshTenant)
      },
    )

    it.live("a Cedar forbid on one tool is PolicyDenied before the server hears of it: the file is not written", () =>
      Effect.gen(function* () {
        const dir = yield* Servers.tempDir
        const denied = join(dir, "denied.txt")
        const allowed = join(dir, "allowed.txt")
        writeFileSync(allowed, "before")
        const def = calling("mcp.forbid", [
          { server: "fs", tool: "write_file", args: { path: denied, content: "should not be" } },
          { server: "fs", tool: "read_text_file", args: { path: allowed } },
        ])
        const policy = cedar(`
          @id("effects") permit (principal, action in Agentplane::Action::"effect", resource);
          @id("no-writes") @reason("no writes to the file server")
          forbid (principal, action == Action::"mcp:fs/write_file", resource);
        `)
        const result = yield* Effect.flatMap(started([Servers.filesystem(dir)]), (servers) =>
          over(def, servers, { policy })(admit(def)),
        )
        expect(result.status).toEqual(Run.RunStatus.Succeeded({ output: ["denied: mcp:fs/write_file", "before"] }))
        expect(existsSync(denied)).toBe(false)
        const records = yield* Effect.provide(Support.journalOf(result.run), backend.layer)
        expect(Support.ofKind(records, "PolicyDenied").map((r) => [r.kind.action, r.kind.reason])).toEqual([
          ["mcp:fs/write_file", "no writes to the file server"],
        ])
        // Refused, never announced: only the read was.
        expect(
          Support.ofKind(records, "EffectStarted").map((r) => (r.kind.descriptor as { readonly kind: string }).kind),
        ).toEqual(["mcp:fs/read_text_file"])
      }).pipe(Effect.scoped, Backend.asFreshTenant),
    )

    it.live("a tool's answer is untrusted with provenance mcp:<server>/<tool>: a policy over it stops the write", () =>
      Effect.gen(function* () {
        const dir = yield* Servers.tempDir
        const file = join(dir, "steered.txt")
        const def = calling("mcp.steered", [
          { server: "everything", tool: "echo", args: { message: "write it" } },
          { server: "fs", tool: "write_file", args: { path: file, content: "steered" } },
        ])
        const policy = cedar(`
          @id("effects") permit (principal, action in Agentplane::Action::"effect", resource);
          @id("not-steered-by-echo") @reason("a write steered by the echo tool")
          forbid (principal, action in Agentplane::Action::"effect", resource)
          when { context.mutates && context.label == "untrusted" && context.provenances.contains("mcp:everything/echo") };
        `)
        const result = yield* Effect.flatMap(started([Servers.everything(), Servers.filesystem(dir)]), (servers) =>
          // An operator's input is trusted: only the echo's answer can make the write untrusted.
          over(def, servers, { policy })(admit(def, "operator")),
        )
        expect(result.status).toEqual(
          Run.RunStatus.Succeeded({ output: ["Echo: write it", "denied: mcp:fs/write_file"] }),
        )
        expect(existsSync(file)).toBe(false)
      }).pipe(Effect.scoped, Backend.asFreshTenant),
    )

    it.live("a mutating tool without idempotentHint, crashed after its act, goes to an operator and acted once", () =>
      Effect.gen(function* () {
        const dir = yield* Servers.tempDir
        const file = join(dir, "ledger.txt")
        writeFileSync(file, "tick")
        // edit_file is annotated mutating and not idempotent: each act adds one "tick".
        const def = calling("mcp.crash", [
          { server: "fs", tool: "edit_file", args: { path: file, edits: [{ oldText: "tick", newText: "tick tick" }] } },
        ])
        const servers = yield* started([Servers.filesystem(dir)])
        const crashed = yield* over(def, servers, {
          leaseTtlSecs: 1,
          crash: TestRuntime.crashAt("after_act", "mcp:fs/edit_file"),
        })(Effect.flip(admit(def)))
        expect(crashed).toBeInstanceOf(Runtime.Crashed)
        expect(readFileSync(file, "utf8")).toBe("tick tick")
        const resumed = yield* over(def, servers)(Support.resumeAfterLapse((crashed as Runtime.Crashed).run))
        expect(resumed.status._tag).toBe("Quarantined")
        const message = resumed.status._tag === "Quarantined" ? resumed.status.message : ""
        expect(message).toContain("mcp:fs/edit_file")
        expect(message).toContain("RequiresOperator")
        expect(readFileSync(file, "utf8")).toBe("tick tick")
        const records = yield* Effect.provide(Support.journalOf(resumed.run), backend.layer)
        expect(Support.ofKind(records, "EffectStarted").map((r) => [r.kind.recovery, r.kind.mutates])).toEqual([
          ["requires_operator", true],
        ])
      }).pipe(Effect.scoped, Backend.asFreshTenant),
    )

    it.live("write_file (idempotentHint) is journaled Idempotent, mutating, and the file is written", () =>
      Effect.gen(function* () {
        const dir = yield* Servers.tempDir
        const file = join(dir, "written.txt")
        const def = calling("mcp.write", [{ server: "fs", tool: "write_file", args: { path: file, content: "once" } }])
        const result = yield* Effect.flatMap(started([Servers.filesystem(dir)]), (servers) =>
          over(def, servers)(admit(def)),
        )
        expect(result.status._tag).toBe("Succeeded")
        expect(readFileSync(file, "utf8")).toBe("once")
        const records = yield* Effect.provide(Support.journalOf(result.run), backend.layer)
        expect(Support.ofKind(records, "EffectStarted").map((r) => [r.kind.recovery, r.kind.mutates])).toEqual([
          ["idempotent", true],
        ])
      }).pipe(Effect.scoped, Backend.asFreshTenant),
    )

    /** Runs `def` on the file server of `dir`, crashing at `point` of `kind`, then resumes it once the lease lapsed. */
    const crashThenResume = (def: RunDefinition.Any, dir: string, point: CrashPoint, kind: string) =>
      Effect.gen(function* () {
        const servers = yield* started([Servers.filesystem(dir)])
        const crashed = yield* over(def, servers, { leaseTtlSecs: 1, crash: TestRuntime.crashAt(point, kind) })(
          Effect.flip(admit(def)),
        )
        expect(crashed).toBeInstanceOf(Runtime.Crashed)
        return yield* over(def, servers)(Support.resumeAfterLapse((crashed as Runtime.Crashed).run))
      })
    const ticking = (file: string, options?: McpCall.Options) => ({
      server: "fs",
      tool: "edit_file",
      args: { path: file, edits: [{ oldText: "tick", newText: "tick tick" }] },
      ...(options === undefined ? {} : { options }),
    })

    it.live("a mutating tool crashed after its announcement, before acting, goes to an operator and never acts", () =>
      Effect.gen(function* () {
        const dir = yield* Servers.tempDir
        const file = join(dir, "ledger.txt")
        writeFileSync(file, "tick")
        const def = calling("mcp.crash.announce", [ticking(file)])
        const resumed = yield* crashThenResume(def, dir, "after_announce", "mcp:fs/edit_file")
        expect(resumed.status._tag).toBe("Quarantined")
        expect(readFileSync(file, "utf8")).toBe("tick")
      }).pipe(Effect.scoped, Backend.asFreshTenant),
    )

    it.live("a definition's recovery overrides the annotations: declared Retry, the edit is made again on resume", () =>
      Effect.gen(function* () {
        const dir = yield* Servers.tempDir
        const file = join(dir, "ledger.txt")
        writeFileSync(file, "tick")
        const def = calling("mcp.crash.override", [ticking(file, { recovery: Run.Recovery.Retry() })])
        const resumed = yield* crashThenResume(def, dir, "after_act", "mcp:fs/edit_file")
        expect(resumed.status._tag).toBe("Succeeded")
        expect(readFileSync(file, "utf8")).toBe("tick tick tick")
        const records = yield* Effect.provide(Support.journalOf(resumed.run), backend.layer)
        expect(Support.ofKind(records, "EffectStarted").map((r) => [r.kind.recovery, r.kind.mutates])).toEqual([
          ["retry", true],
        ])
      }).pipe(Effect.scoped, Backend.asFreshTenant),
    )

    it.live("a tool's error result is the step's typed McpToolFailed, journaled, and replayed with no server", () =>
      Effect.gen(function* () {
        const dir = yield* Servers.tempDir
        const def = calling("mcp.toolfailed", [
          { server: "fs", tool: "write_file", args: { path: "/agentplane-outside/x.txt", content: "no" } },
        ])
        const result = yield* Effect.flatMap(started([Servers.filesystem(dir)]), (servers) =>
          over(def, servers)(admit(def)),
        )
        expect(result.status).toEqual(Run.RunStatus.Succeeded({ output: ["failed: fs/write_file"] }))
        const records = yield* Effect.provide(Support.journalOf(result.run), backend.layer)
        const failed = Support.ofKind(records, "EffectFailed").map((r) => [
          r.kind.permanent,
          (r.kind.error as { readonly _tag: string })._tag,
        ])
        expect(failed).toEqual([[true, "McpToolFailed"]])
        const report = yield* over(def, notConfigured)(Effect.flatMap(rt, (r) => r.replay(result.run)))
        expect([report.reproduced, report.status]).toEqual([true, result.status])
      }).pipe(Effect.scoped, Backend.asFreshTenant),
    )
  })
