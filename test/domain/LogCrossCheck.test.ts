/**
 * The log's proofs and checkpoints checked by code not written here: Sigstore's verifier
 * (`@sigstore/verify`), which checks Rekor's RFC 6962 inclusion proofs and C2SP checkpoints.
 * Its two checks are internal modules of the package (it verifies whole Rekor bundles through
 * its public API), so they are imported by path and fed the shapes they read. It has no
 * consistency-proof check; consistency is held to the transparency-dev probes instead.
 */
import { randomBytes } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { LogCheckpoint, verifyCheckpoint } from "@sigstore/verify/dist/tlog/checkpoint.js"
import { verifyMerkleInclusion } from "@sigstore/verify/dist/tlog/merkle.js"
import { Either, FastCheck } from "effect"
import * as Checkpoint from "../../src/domain/Checkpoint.js"
import * as Digest from "../../src/domain/Digest.js"
import { generateRunId } from "../../src/domain/Ids.js"
import * as LogLeaf from "../../src/domain/LogLeaf.js"
import * as Merkle from "../../src/domain/Merkle.js"
import * as MerkleNodes from "../../src/domain/MerkleNodes.js"
import * as SignedNote from "../../src/domain/SignedNote.js"

type Entry = Parameters<typeof verifyMerkleInclusion>[0]
type Authority = Parameters<typeof verifyCheckpoint>[1][number]

const leaves = Array.from(
  { length: 300 },
  (_, i) =>
    new LogLeaf.LogLeaf({
      run: generateRunId(),
      chainHead: Digest.of(`head ${i}`),
      records: i + 1,
      outcome: i % 3 === 0 ? "succeeded" : "cancelled",
    }),
)
const integrated = MerkleNodes.integrate(0, [], leaves.map(LogLeaf.hash))
const stored = new Map(integrated.nodes.map((n) => [`${n.level}/${n.index}`, n.hash]))
const lookup: MerkleNodes.Lookup = (level, index) => stored.get(`${level}/${index}`) as Digest.Digest

const bytes = (d: Digest.Digest): Buffer => Buffer.from(Digest.toBytes(d))

/** Sigstore's inclusion check of leaf `index` at `size`, with our proof: whether it throws. */
const sigstoreAccepts = (index: number, size: number, proof: ReadonlyArray<Digest.Digest>, leaf: Uint8Array) => {
  const entry = {
    inclusionProof: { logIndex: String(index), hashes: proof.map(bytes) },
    canonicalizedBody: Buffer.from(leaf),
  } as unknown as Entry
  const checkpoint = new LogCheckpoint("o", BigInt(size), bytes(MerkleNodes.rootAt(size, lookup)), [])
  try {
    verifyMerkleInclusion(entry, checkpoint)
    return true
  } catch {
    return false
  }
}

describe("inclusion proofs, checked by @sigstore/verify", () => {
  it("accepts our proof of every leaf at every size that covers it", () => {
    FastCheck.assert(
      FastCheck.property(
        FastCheck.integer({ min: 1, max: 300 }).chain((n) =>
          FastCheck.tuple(FastCheck.constant(n), FastCheck.integer({ min: 0, max: n - 1 })),
        ),
        ([n, index]) => {
          const proof = MerkleNodes.inclusionProof(index, n, lookup)
          expect(sigstoreAccepts(index, n, proof, LogLeaf.encode(leaves[index] as LogLeaf.LogLeaf))).toBe(true)
        },
      ),
      { numRuns: 300 },
    )
  })

  it("refuses our proof for another leaf, another index, or with a hash dropped", () => {
    const proof = MerkleNodes.inclusionProof(77, 213, lookup)
    const leaf = LogLeaf.encode(leaves[77] as LogLeaf.LogLeaf)
    expect(sigstoreAccepts(77, 213, proof, leaf)).toBe(true)
    expect(sigstoreAccepts(77, 213, proof, LogLeaf.encode(leaves[78] as LogLeaf.LogLeaf))).toBe(false)
    expect(sigstoreAccepts(76, 213, proof, leaf)).toBe(false)
    expect(sigstoreAccepts(77, 213, proof.slice(1), leaf)).toBe(false)
  })
})

describe("checkpoints, checked by @sigstore/verify", () => {
  const log = SignedNote.signer("agentplane.example/acme", randomBytes(32))
  // Sigstore finds the log's key by the first four bytes of its log id and a name inside its URL.
  const id = Buffer.alloc(32)
  id.writeUInt32BE(log.keyId)
  const authority: Authority = {
    logID: id,
    baseURL: "https://agentplane.example/acme",
    publicKey: SignedNote.publicKeyObject(log.publicKey),
    validFor: { start: new Date(0), end: new Date(8.64e15) },
  }
  const envelope = (note: string) => ({ inclusionProof: { checkpoint: { envelope: note } } }) as unknown as Entry

  it("accepts our signed checkpoint and reads the same origin, size and root", () => {
    const cp = new Checkpoint.Checkpoint({ origin: log.name, size: 300, root: integrated.root })
    const note = Either.getOrThrow(Checkpoint.sign(cp, [log]))
    const theirs = verifyCheckpoint(envelope(note), [authority])
    expect([theirs.origin, theirs.logSize, theirs.logHash.toString("hex")]).toEqual([log.name, 300n, integrated.root])
  })

  it("accepts our checkpoint of the empty tree: size 0, root SHA-256 of nothing", () => {
    const cp = new Checkpoint.Checkpoint({ origin: log.name, size: 0, root: Merkle.EMPTY_ROOT })
    const note = Either.getOrThrow(Checkpoint.sign(cp, [log]))
    const theirs = verifyCheckpoint(envelope(note), [authority])
    expect([theirs.logSize, theirs.logHash.toString("hex")]).toEqual([0n, Merkle.EMPTY_ROOT])
  })

  it("refuses our checkpoint once its size is altered", () => {
    const cp = new Checkpoint.Checkpoint({ origin: log.name, size: 300, root: integrated.root })
    const note = Either.getOrThrow(Checkpoint.sign(cp, [log])).replace("\n300\n", "\n301\n")
    expect(() => verifyCheckpoint(envelope(note), [authority])).toThrow(/signature/)
  })
})
