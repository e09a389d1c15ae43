/**
 * `serve`'s start, in process: the address is probed before the store opens, but another process
 * can take the port in between; that listen is refused in the same words, on either backend.
 */
import { randomUUID } from "node:crypto"
import { createServer } from "node:net"
import { join } from "node:path"
import { NodeContext } from "@effect/platform-node"
import { describe, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { inject } from "vitest"
import * as Serve from "../../src/cli/Serve.js"
import { assert } from "../support/Assert.js"

const backends = () => [
  { name: "SQLite", store: join(inject("scratchDir"), `serve-${randomUUID()}.db`) },
  { name: "PostgreSQL", store: inject("pgUrl") },
]

/** A free port on 127.0.0.1, found by binding port 0 and letting it go. */
const freePort = Effect.async<number>((resume) => {
  const server = createServer()
  server.listen({ host: "127.0.0.1", port: 0 }, () => {
    const address = server.address()
    const port = address !== null && typeof address !== "string" ? address.port : 0
    server.close(() => resume(Effect.succeed(port)))
  })
})

/** Holds `port` on 127.0.0.1 until the scope closes, as another server would. */
const occupy = (port: number) =>
  Effect.acquireRelease(
    Effect.async<ReturnType<typeof createServer>>((resume) => {
      const server = createServer()
      server.listen({ host: "127.0.0.1", port }, () => resume(Effect.succeed(server)))
    }),
    (server) =>
      Effect.async<void>((resume) => {
        server.close(() => resume(Effect.void))
      }),
  )

for (const backend of backends()) {
  describe(`Serve.layer on ${backend.name}`, () => {
    it.scoped("a port taken after the probe is refused by the listen, naming the address", () =>
      Effect.gen(function* () {
        const port = yield* freePort
        const server = yield* Serve.layer({
          addr: `127.0.0.1:${port}`,
          store: backend.store,
          tokens: Option.some(join("examples", "demo-tokens.json")),
          policy: Option.some(join("examples", "demo-policy")),
        })
        yield* occupy(port)
        const refused = yield* Effect.flip(Layer.build(server))
        assert.strictEqual(refused._tag, "AddressUnavailable")
        assert.strictEqual(
          refused.message,
          `cannot listen on 127.0.0.1:${port}: the address is already in use (another server is listening there); stop it or give another --addr`,
        )
      }).pipe(Effect.provide(NodeContext.layer)),
    )
  })
}
