/**
 * BlobStore on a filesystem (the default, §9.1): one file per blob under
 * `<root>/<tenant>/<first two hex digits>/<digest>`, and beside it `<digest>.expired`, the
 * tombstone, holding `{at, reason}` as JSON. The tenant is URI-encoded into one path segment.
 *
 * Writes are atomic: bytes go to a unique temporary file, are synced, then renamed into place, so
 * a crash leaves the blob whole or absent, never half written. The tombstone is hard-linked into
 * place, which fails if one exists: that is what makes the first expiry stand, and it is laid *before* the bytes
 * are unlinked: a crash between the two leaves a tombstone over bytes that `has` and `get` already
 * treat as gone, and a re-run of the expiry unlinks them.
 */
import { randomUUID } from "node:crypto"
import * as fs from "node:fs/promises"
import { join } from "node:path"
import { Effect, Layer, Option, Schema } from "effect"
import * as Digest from "../domain/Digest.js"
import { Tenant } from "../domain/Tenant.js"
import { Timestamp } from "../domain/Time.js"
import { BlobExpired } from "../errors/ErasureError.js"
import { Backend, Corrupt } from "../errors/StoreError.js"
import { BlobStore, type Tombstone } from "../services/BlobStore.js"

export interface Options {
  /** The directory holding every tenant's blobs; created when missing. */
  readonly root: string
}

export const make = (options: Options): Effect.Effect<typeof BlobStore.Service, Backend> =>
  Effect.gen(function* () {
    yield* io("create the blob directory", () => fs.mkdir(options.root, { recursive: true }))

    const paths = Effect.fnUntraced(function* (digest: Digest.Digest) {
      const tenant = yield* Tenant
      const dir = join(options.root, encodeURIComponent(tenant), digest.slice(0, 2))
      return { dir, bytes: join(dir, digest), tomb: join(dir, `${digest}.expired`) }
    })

    const readTomb = (
      digest: Digest.Digest,
      path: string,
    ): Effect.Effect<Option.Option<Tombstone>, Backend | Corrupt> =>
      io(`read the tombstone of ${digest}`, () => fs.readFile(path, "utf8").catch(absentAs(null))).pipe(
        Effect.flatMap((text) =>
          text === null
            ? Effect.succeedNone
            : Schema.decodeUnknown(Schema.parseJson(TombstoneFile))(text).pipe(
                Effect.map(Option.some),
                Effect.mapError((e) => new Corrupt({ detail: `tombstone of blob ${digest}: ${e.message}`, seq: 0 })),
              ),
        ),
      )

    const expiredError = (digest: Digest.Digest, t: Tombstone) =>
      new BlobExpired({ digest, at: t.at, reason: t.reason })

    return BlobStore.of({
      put: (bytes) =>
        Effect.gen(function* () {
          const digest = Digest.of(bytes)
          const p = yield* paths(digest)
          const refuseIfExpired = Effect.flatMap(
            readTomb(digest, p.tomb).pipe(Effect.catchTag("Corrupt", () => Effect.succeed(Option.some(UNREADABLE)))),
            Option.match({ onNone: () => Effect.void, onSome: (t) => Effect.fail(expiredError(digest, t)) }),
          )
          yield* refuseIfExpired
          yield* io(`store blob ${digest}`, async () => {
            await fs.mkdir(p.dir, { recursive: true })
            const tmp = join(p.dir, `.${digest}.${randomUUID()}.tmp`)
            const handle = await fs.open(tmp, "wx")
            try {
              await handle.writeFile(bytes)
              await handle.sync()
            } finally {
              await handle.close()
            }
            // Renaming over an existing blob replaces identical bytes with identical bytes.
            await fs.rename(tmp, p.bytes)
          })
          // An expiry that ran while we wrote would have found no bytes to unlink: unlink ours.
          yield* refuseIfExpired.pipe(
            Effect.tapError(() => io(`unlink blob ${digest}`, () => fs.rm(p.bytes, { force: true }))),
          )
          return digest
        }),

      get: (digest) =>
        Effect.gen(function* () {
          const p = yield* paths(digest)
          const tomb = yield* readTomb(digest, p.tomb)
          if (Option.isSome(tomb)) return yield* expiredError(digest, tomb.value)
          const bytes = yield* io(`read blob ${digest}`, () => fs.readFile(p.bytes).catch(absentAs(null)))
          if (bytes === null) return Option.none()
          // Checked on every read: a file is outside the chain, so nothing else would notice a changed byte.
          if (Digest.of(bytes) !== digest) {
            return yield* new Corrupt({ detail: `blob ${digest}: the stored bytes do not match their digest`, seq: 0 })
          }
          return Option.some(new Uint8Array(bytes))
        }),

      has: (digest) =>
        Effect.gen(function* () {
          const p = yield* paths(digest)
          const [bytes, tomb] = yield* Effect.all([exists(p.bytes), exists(p.tomb)])
          return bytes && !tomb
        }),

      expire: (digest, at, reason) =>
        Effect.gen(function* () {
          const p = yield* paths(digest)
          yield* io("create the blob directory", () => fs.mkdir(p.dir, { recursive: true }))
          const laid = yield* io(`lay the tombstone of ${digest}`, () =>
            writeDurably(p.tomb, JSON.stringify({ at, reason })).then(
              () => true,
              (e: NodeJS.ErrnoException) => {
                if (e.code === "EEXIST") return false
                throw e
              },
            ),
          )
          // Also when the tombstone stood already: an earlier expiry may have died before this.
          yield* io(`unlink blob ${digest}`, () => fs.rm(p.bytes, { force: true }))
          return laid
        }),

      tombstone: (digest) => Effect.flatMap(paths(digest), (p) => readTomb(digest, p.tomb)),
    })
  })

export const layer = (options: Options): Layer.Layer<BlobStore, Backend> => Layer.effect(BlobStore, make(options))

// internal

const TombstoneFile = Schema.Struct({ at: Timestamp, reason: Schema.String })

/** A tombstone that is there but unreadable still means "expired": content must not come back. */
const UNREADABLE: Tombstone = { at: Timestamp.make(0), reason: "unreadable tombstone" }

const io = <A>(what: string, f: () => Promise<A>): Effect.Effect<A, Backend> =>
  Effect.tryPromise({ try: f, catch: (e) => new Backend({ detail: `backend: cannot ${what}: ${String(e)}` }) })

const absentAs =
  <A>(value: A) =>
  (e: NodeJS.ErrnoException): A => {
    if (e.code === "ENOENT") return value
    throw e
  }

const exists = (path: string) => io(`stat ${path}`, () => fs.stat(path).then(() => true, absentAs(false)))

/**
 * Creates `path` exclusively (`EEXIST` if it exists) with `text`, synced: written to a temporary
 * file first and hard-linked into place, since a link is atomic and exclusive, so a crash never
 * leaves a half-written tombstone.
 */
const writeDurably = async (path: string, text: string) => {
  const tmp = `${path}.${randomUUID()}.tmp`
  const handle = await fs.open(tmp, "wx")
  try {
    await handle.writeFile(text)
    await handle.sync()
  } finally {
    await handle.close()
  }
  try {
    await fs.link(tmp, path)
  } finally {
    await fs.rm(tmp, { force: true })
  }
}
