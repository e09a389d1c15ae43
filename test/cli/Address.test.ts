/**
 * `--addr`: parsed as host:port, shown as it is written, and probed before the store is opened,
 * each refusal in words an operator can act on.
 */
import { createServer } from "node:net"
import { describe, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import * as Address from "../../src/cli/Address.js"
import { assert } from "../support/Assert.js"

/** Holds a free port on 127.0.0.1 for the duration of `body`, as another server would. */
const holding = <A, E>(body: (port: number) => Effect.Effect<A, E>) =>
  Effect.acquireUseRelease(
    Effect.async<ReturnType<typeof createServer>>((resume) => {
      const server = createServer()
      server.listen({ host: "127.0.0.1", port: 0 }, () => resume(Effect.succeed(server)))
    }),
    (server) => {
      const address = server.address()
      return address === null || typeof address === "string" ? Effect.dieMessage("no TCP address") : body(address.port)
    },
    (server) =>
      Effect.async<void>((resume) => {
        server.close(() => resume(Effect.void))
      }),
  )

describe("Address.parse and show", () => {
  it("round-trips host:port and bracketed IPv6", () => {
    for (const input of ["127.0.0.1:8080", "[::1]:8080", "localhost:0"]) {
      const parsed = Address.parse(input)
      if (Either.isLeft(parsed)) return assert.fail(parsed.left)
      assert.strictEqual(Address.show(parsed.right), input)
    }
  })

  it("refuses what is not host:port, naming it", () => {
    for (const input of ["", ":8080", "8080", "host:65536", "host:port", "[::1]"]) {
      assert.deepStrictEqual(
        Address.parse(input),
        Either.left(`--addr ${JSON.stringify(input)} is not host:port (e.g. 127.0.0.1:8080, [::1]:8080)`),
      )
    }
  })
})

describe("Address.probe", () => {
  it.effect("succeeds on a free address and leaves it free", () =>
    holding((port) => Effect.succeed(port)).pipe(
      Effect.flatMap((port) =>
        Effect.zipRight(Address.probe({ host: "127.0.0.1", port }), Address.probe({ host: "127.0.0.1", port })),
      ),
    ),
  )

  it.effect("refuses an address in use, naming it", () =>
    holding((port) =>
      Effect.map(Effect.flip(Address.probe({ host: "127.0.0.1", port })), (e) => {
        assert.strictEqual(e._tag, "AddressUnavailable")
        assert.strictEqual(
          e.message,
          `cannot listen on 127.0.0.1:${port}: the address is already in use (another server is listening there); stop it or give another --addr`,
        )
      }),
    ),
  )

  it.effect("refuses a host no interface has, and one that does not resolve", () =>
    Effect.gen(function* () {
      // TEST-NET-1 (RFC 5737): never assigned to a machine.
      const foreign = yield* Effect.flip(Address.probe({ host: "192.0.2.1", port: 8080 }))
      assert.strictEqual(
        foreign.message,
        "cannot listen on 192.0.2.1:8080: no network interface of this machine has that address; give another --addr",
      )
      const unknown = yield* Effect.flip(Address.probe({ host: "no-such-host.invalid", port: 8080 }))
      assert.match(unknown.message, /^cannot listen on no-such-host\.invalid:8080: the host name .* does not resolve/)
    }),
  )
})

describe("Address.unavailable", () => {
  it("words each system error, keeps any other's message, and is never blank", () => {
    const address = { host: "::1", port: 80 }
    const because = (cause: unknown) => Address.unavailable(address, cause).message
    assert.match(
      because(Object.assign(new Error("listen EACCES"), { code: "EACCES" })),
      /^cannot listen on \[::1\]:80: permission denied/,
    )
    assert.match(because(Object.assign(new Error("x"), { code: "EADDRINUSE" })), /already in use/)
    assert.strictEqual(because(new Error("something else")), "cannot listen on [::1]:80: something else")
    assert.strictEqual(because("odd"), "cannot listen on [::1]:80: odd")
  })
})
