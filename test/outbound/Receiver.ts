/**
 * A real HTTP receiver on a loopback address (ephemeral port) that records every request it
 * gets and answers with `respond`. Closed, connections and all, when the scope closes.
 */
import * as Http from "node:http"
import { Effect, type Scope } from "effect"

export interface Received {
  readonly method: string
  readonly headers: Http.IncomingHttpHeaders
  readonly body: Buffer
}

export interface Receiver {
  readonly url: string
  readonly port: number
  readonly received: ReadonlyArray<Received>
  /** How many responses have closed, answered or cut off by the client. */
  readonly closed: () => number
}

/** Answers the request; return without ending `response` to never answer. */
export type Respond = (request: Received, response: Http.ServerResponse) => void

export const ok: Respond = (_, response) => {
  response.writeHead(204).end()
}

export const status =
  (code: number, headers: Http.OutgoingHttpHeaders = {}): Respond =>
  (_, response) => {
    response.writeHead(code, headers).end("answer body")
  }

export const never: Respond = () => {}

/** Answers 200 and starts a body it never finishes. */
export const stall: Respond = (_, response) => {
  response.writeHead(200, { "content-type": "text/plain" })
  response.write("the first of many bytes")
}

export const start = (respond: Respond, host = "127.0.0.1"): Effect.Effect<Receiver, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.async<{ server: Http.Server; receiver: Receiver }>((resume) => {
      const received: Array<Received> = []
      let closed = 0
      const server = Http.createServer((request, response) => {
        response.on("close", () => {
          closed++
        })
        const chunks: Array<Buffer> = []
        request.on("data", (chunk: Buffer) => chunks.push(chunk))
        request.on("end", () => {
          const record = { method: request.method ?? "", headers: request.headers, body: Buffer.concat(chunks) }
          received.push(record)
          respond(record, response)
        })
      })
      server.listen(0, host, () => {
        const address = server.address()
        const port = typeof address === "object" && address !== null ? address.port : 0
        resume(
          Effect.succeed({
            server,
            receiver: { url: `http://${host}:${port}/hook`, port, received, closed: () => closed },
          }),
        )
      })
    }),
    ({ server }) =>
      Effect.async<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      }),
  ).pipe(Effect.map(({ receiver }) => receiver))
