/**
 * LogStore in process memory: each tenant's integrated size, complete subtrees and checkpoints in
 * maps, integrated from the leaves the memory journal store sequenced (`Sequenced`). Every verb is
 * one synchronous step, so an integration is whole or absent and two callers never integrate a
 * leaf twice.
 */
import { Effect, Either, Option } from "effect"
import type { Digest } from "../../domain/Digest.js"
import * as LogKey from "../../domain/LogKey.js"
import * as LogLeaf from "../../domain/LogLeaf.js"
import { EMPTY_ROOT } from "../../domain/Merkle.js"
import * as MerkleNodes from "../../domain/MerkleNodes.js"
import type { TenantId } from "../../domain/Tenant.js"
import type { Timestamp } from "../../domain/Time.js"
import { RunNotLogged } from "../../errors/LogError.js"
import type { LogStore, StoredCheckpoint } from "../../services/LogStore.js"
import * as LogRules from "../internal/LogRules.js"
import { clampLimit, perTenantEither } from "./internal/Memory.js"
import * as Sequenced from "./internal/Sequenced.js"

interface State {
  size: number
  readonly nodes: Map<string, Digest>
  readonly checkpoints: Map<number, StoredCheckpoint>
}

/** `sequenced`: the leaves of the memory journal store of the same build (`MemoryBackend`). */
export const make = (sequenced: Sequenced.Sequenced = Sequenced.make()): Effect.Effect<typeof LogStore.Service> =>
  Effect.sync(() => {
    const tenants = perTenantEither((): State => ({ size: 0, nodes: new Map(), checkpoints: new Map() }))
    // Nothing here is decoded from storage, so a missing subtree would be this module's own bug.
    const lookupIn =
      (s: State): MerkleNodes.Lookup =>
      (level, index) => {
        const hash = s.nodes.get(`${level}/${index}`)
        if (hash === undefined) throw new Error(`the memory log lost subtree ${level}/${index}`)
        return hash
      }
    // The size-0 checkpoint, signed first if the log has none; one synchronous step, so once.
    const emptyCheckpoint = (s: State, tenant: TenantId, key: LogKey.LogKey, now: Timestamp) => {
      const kept = s.checkpoints.get(0)
      if (kept !== undefined) return Either.right(kept)
      return Either.map(LogKey.sign(key, tenant, 0, EMPTY_ROOT), (note) => {
        const cp: StoredCheckpoint = { size: 0, root: EMPTY_ROOT, note, signedAt: now }
        s.checkpoints.set(0, cp)
        return cp
      })
    }
    return {
      integrate: (key, now, max) =>
        tenants((s, tenant) => {
          const leaves = sequenced.from(tenant, s.size, clampLimit(max))
          if (leaves.length === 0) {
            // The empty tree is signed at the first integration call, as `LogStoreSql` does: a
            // log with no leaves has a size-0 checkpoint.
            const empty = s.size === 0 ? emptyCheckpoint(s, tenant, key, now) : Either.right(undefined)
            return Either.map(empty, () => ({ leaves: 0, size: s.size }))
          }
          const lookup = lookupIn(s)
          const edge = MerkleNodes.rootPlan(s.size).nodes.map((n) => lookup(n.level, n.index))
          const done = MerkleNodes.integrate(s.size, edge, leaves.map(LogLeaf.hash))
          const note = LogKey.sign(key, tenant, done.size, done.root)
          if (Either.isLeft(note)) return Either.left(note.left)
          for (const n of done.nodes) s.nodes.set(`${n.level}/${n.index}`, n.hash)
          s.size = done.size
          s.checkpoints.set(done.size, { size: done.size, root: done.root, note: note.right, signedAt: now })
          return Either.right({ leaves: leaves.length, size: done.size })
        }),
      signEmpty: (key, now) =>
        tenants((s, tenant) => {
          if (s.size === 0) return emptyCheckpoint(s, tenant, key, now)
          const latest = s.checkpoints.get(s.size)
          if (latest === undefined) throw new Error(`the memory log lost its checkpoint at ${s.size}`)
          return Either.right(latest)
        }),
      checkpoint: () => tenants((s) => Either.right(Option.fromNullable(s.checkpoints.get(s.size)))),
      checkpointAt: (size) => tenants((s) => Either.right(Option.fromNullable(s.checkpoints.get(size)))),
      inclusionProof: (run, size) =>
        tenants((s, tenant) => {
          const position = sequenced.positionOf(tenant, run)
          if (position === undefined) return Either.left(new RunNotLogged({ run }))
          const refused = LogRules.inclusion(run, position, size, s.size)
          if (Either.isLeft(refused)) return Either.left(refused.left)
          const [leaf] = sequenced.from(tenant, position, 1)
          if (leaf === undefined) return Either.left(new RunNotLogged({ run }))
          return Either.right({
            index: position,
            size,
            leaf,
            proof: MerkleNodes.inclusionProof(position, size, lookupIn(s)),
          })
        }),
      leaves: (from, limit) =>
        tenants((_, tenant) =>
          Either.right(
            Number.isSafeInteger(from) && from >= 0
              ? sequenced.from(tenant, from, clampLimit(limit)).map((leaf, i) => ({ index: from + i, leaf }))
              : [],
          ),
        ),
      consistencyProof: (from, to) =>
        tenants((s) =>
          Either.map(LogRules.consistency(from, to, s.size), () =>
            from === 0 ? [] : MerkleNodes.consistencyProof(from, to, lookupIn(s)),
          ),
        ),
    }
  })
