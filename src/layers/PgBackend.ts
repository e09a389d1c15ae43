/**
 * Every store on shared PostgreSQL, where several plane instances serve one tenant.
 */
import type { SqlClient } from "@effect/sql"
import { Config, Effect, Layer } from "effect"
import { Backend } from "../errors/StoreError.js"
import * as PgPool from "./internal/PgPool.js"
import * as Migrations from "./Migrations.js"
import * as SqlStores from "./SqlStores.js"

export interface Options {
  /** `postgres://user@host:port/database`. */
  readonly url: string
  /** Pool size; every verb holds at most one connection, so even 2 cannot deadlock. Default 10. */
  readonly maxConnections?: number
}

/**
 * The pg client for `options`, with the driver's error turned into `Backend`. Its pool drops a
 * connection the server terminated, so one lost backend fails one verb, not also the next.
 */
export const layerClient = (options: Options): Layer.Layer<SqlClient.SqlClient, Backend> =>
  PgPool.layer(options).pipe(
    Layer.catchAll((e) => Layer.fail(new Backend({ detail: `cannot reach PostgreSQL: ${e.message}` }))),
  )

/** Every store on the database at `options.url`, migrated (under an advisory lock). */
export const layer = (options: Options): Layer.Layer<SqlStores.Stores, Backend> =>
  SqlStores.layer.pipe(Layer.provide(Migrations.layer), Layer.provide(layerClient(options)))

/** As `layer`, reading `DATABASE_URL` and optionally `AGENTPLANE_PG_POOL`. */
export const layerConfig: Layer.Layer<SqlStores.Stores, Backend> = Layer.unwrapEffect(
  Config.all({
    url: Config.string("DATABASE_URL"),
    pool: Config.option(Config.integer("AGENTPLANE_PG_POOL")),
  }).pipe(
    Effect.map(({ url, pool }) => layer(pool._tag === "Some" ? { url, maxConnections: pool.value } : { url })),
    Effect.mapError((e) => new Backend({ detail: `configuration: ${e.message}` })),
  ),
)
