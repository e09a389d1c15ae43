/**
 * The MCP servers of an instance (§7.14) as one scoped resource: every configured server is
 * connected (a stdio server started) when the layer is built, its tools listed, and every
 * connection closed when the scope ends. A server that is down at start, or whose process dies
 * later, is connected again by the next call that needs it, with backoff; a server that stays
 * down fails that call with `McpUnavailable`, and the instance goes on.
 *
 * The tool list is kept as last listed, so the annotations a call's recovery is derived from are
 * read without contacting the server: a replay must not (§7.14).
 */
import { Context, type Duration, Effect, Layer, Option, Schedule, type Scope } from "effect"
import type { Json } from "../domain/Json.js"
import { type McpCallLost, type McpError, McpUnavailable, McpUnknownServer } from "../errors/McpError.js"
import * as Connection from "./Connection.js"
import type * as ServerConfig from "./ServerConfig.js"

/** One server's state, for `/readyz` and metrics. */
export interface Health {
  readonly server: string
  readonly connected: boolean
  /** The running child's process id (stdio), when connected. */
  readonly pid: Option.Option<number>
  /** Connections made so far: more than one means the server was reconnected. */
  readonly connects: number
}

export interface Service {
  /** The configured servers' names, in configuration order. */
  readonly names: ReadonlyArray<string>
  /** The tool as the server last listed it; never contacts the server. None: unknown server, never listed, or no such tool. */
  readonly describe: (server: string, tool: string) => Option.Option<Connection.Tool>
  /** `tools/list` now (connecting first if needed), refreshing what `describe` answers. */
  readonly tools: (
    server: string,
  ) => Effect.Effect<ReadonlyArray<Connection.Tool>, McpUnknownServer | McpUnavailable | McpCallLost>
  /** `tools/call` (connecting first if needed); not retried here: a retry is the caller's decision (§7.1). */
  readonly call: (
    server: string,
    tool: string,
    args: Readonly<Record<string, Json>>,
    meta: Readonly<Record<string, string>>,
  ) => Effect.Effect<Connection.Answer, McpError>
  readonly health: Effect.Effect<ReadonlyArray<Health>>
}

export class McpServers extends Context.Tag("agentplane/McpServers")<McpServers, Service>() {}

/** How a connection is retried before a call gives up: 4 tries, 50 ms doubling. */
export interface Options {
  readonly connectTries?: number
  readonly connectBackoff?: Duration.DurationInput
}

/** The servers of `configs`, connected now and closed with the scope; duplicate names are a defect of the configuration. */
export const layer = (
  configs: ReadonlyArray<ServerConfig.ServerConfig>,
  options: Options = {},
): Layer.Layer<McpServers> => Layer.scoped(McpServers, make(configs, options))

/** As `layer`, the service itself, in a scope. */
export const make = (
  configs: ReadonlyArray<ServerConfig.ServerConfig>,
  options: Options = {},
): Effect.Effect<Service, never, Scope.Scope> =>
  Effect.gen(function* () {
    const states = new Map<string, State>()
    for (const config of configs) {
      if (states.has(config.name)) return yield* Effect.dieMessage(`MCP server ${config.name} is configured twice`)
      states.set(config.name, {
        config,
        connection: undefined,
        tools: new Map(),
        connects: 0,
        lock: yield* Effect.makeSemaphore(1),
      })
    }
    let closed = false
    const schedule = Schedule.exponential(options.connectBackoff ?? "50 millis").pipe(
      Schedule.intersect(Schedule.recurs((options.connectTries ?? 4) - 1)),
    )

    const stateOf = (server: string, tool: string) => {
      const state = states.get(server)
      return state === undefined ? Effect.fail(new McpUnknownServer({ server, tool })) : Effect.succeed(state)
    }

    const list = (state: State, connection: Connection.Connection) =>
      Effect.tap(connection.tools, (tools) =>
        Effect.sync(() => {
          state.tools = new Map(tools.map((t) => [t.name, t]))
        }),
      )

    /** The live connection, made (and its tools listed) when there is none or it died. */
    const ensure = (state: State, tool: string): Effect.Effect<Connection.Connection, McpUnavailable> =>
      state.lock.withPermits(1)(
        Effect.suspend(() => {
          const server = state.config.name
          if (closed)
            return Effect.fail(new McpUnavailable({ server, tool, detail: "the instance closed its MCP servers" }))
          if (state.connection?.alive() === true) return Effect.succeed(state.connection)
          state.connection = undefined
          return Connection.connect(state.config).pipe(
            Effect.retry(schedule),
            Effect.mapError((e) => new McpUnavailable({ server, tool, detail: e.detail })),
            Effect.tap((connection) =>
              Effect.sync(() => {
                state.connection = connection
                state.connects += 1
              }),
            ),
            // A fresh connection's tool list is what later calls' recovery reads; failing to list
            // does not make the server unusable for a call.
            Effect.tap((connection) => Effect.ignore(list(state, connection))),
          )
        }),
      )

    yield* Effect.addFinalizer(() =>
      Effect.forEach(
        states.values(),
        (state) =>
          Effect.suspend(() => {
            const connection = state.connection
            state.connection = undefined
            return connection === undefined ? Effect.void : connection.close
          }),
        { discard: true, concurrency: "unbounded" },
      ).pipe(Effect.zipLeft(Effect.sync(() => (closed = true)))),
    )
    // Connected with the instance; one that is down now is tried again by the first call.
    yield* Effect.forEach(
      states.values(),
      (state) =>
        ensure(state, "*").pipe(
          Effect.catchAll((e) => Effect.logWarning(e.message)),
          Effect.annotateLogs("mcp.server", state.config.name),
        ),
      { discard: true, concurrency: "unbounded" },
    )

    return {
      names: configs.map((c) => c.name),
      describe: (server, tool) => Option.fromNullable(states.get(server)?.tools.get(tool)),
      tools: (server) =>
        Effect.flatMap(stateOf(server, "*"), (state) =>
          Effect.flatMap(ensure(state, "*"), (connection) => list(state, connection)),
        ),
      call: (server, tool, args, meta) =>
        Effect.flatMap(stateOf(server, tool), (state) =>
          Effect.flatMap(ensure(state, tool), (connection) => connection.call(tool, args, meta)),
        ),
      health: Effect.sync(() =>
        [...states.values()].map((state) => {
          const connected = state.connection?.alive() === true
          return {
            server: state.config.name,
            connected,
            pid: connected ? Option.fromNullable(state.connection?.pid) : Option.none(),
            connects: state.connects,
          }
        }),
      ),
    } satisfies Service
  })

// internal

interface State {
  readonly config: ServerConfig.ServerConfig
  connection: Connection.Connection | undefined
  tools: ReadonlyMap<string, Connection.Tool>
  connects: number
  readonly lock: Effect.Semaphore
}
