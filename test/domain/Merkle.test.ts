import { readFileSync } from "node:fs"
import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck } from "effect"
import * as Digest from "../../src/domain/Digest.js"
import * as Merkle from "../../src/domain/Merkle.js"
import * as MerkleProof from "../../src/domain/MerkleProof.js"

/**
 * Known answers from transparency-dev/merkle (Apache-2.0): the eight leaves its tests (and
 * Certificate Transparency's before it) use, the root of every prefix, every complete subtree,
 * and its published inclusion and consistency proofs (`testonly/constants.go`,
 * `cmd/proofgen/main.go`, and the probe files in `vectors/transparency-dev-merkle.json`).
 */
const LEAVES = ["", "00", "10", "2021", "3031", "40414243", "5051525354555657", "606162636465666768696a6b6c6d6e6f"]
const hashes = LEAVES.map((hex) => Merkle.leafHash(Buffer.from(hex, "hex")))
const D = (hex: string): Digest.Digest => Digest.Digest.make(hex)

const ROOTS = [
  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
  "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
  "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
  "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
  "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
  "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
  "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
  "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
  "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
]

const LEAF_HASHES = [
  "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
  "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
  "0298d122906dcfc10892cb53a73992fc5b9f493ea4c9badb27b791b4127a7fe7",
  "07506a85fd9dd2f120eb694f86011e5bb4662e5c415a62917033d4a9624487e7",
  "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
  "4271a26be0d8a84f0bd54c8c302e7cb3a3b5d1fa6780a40bcce2873477dab658",
  "b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f",
  "46f6ffadd3d06a09ff3c5860d2755c8b9819db7df44251788c7d8e3180de8eb1",
]

// The published proofs, leaf index 0-based (the source lists them 1-based).
const INCLUSION: ReadonlyArray<readonly [number, number, ReadonlyArray<string>]> = [
  [0, 1, []],
  [
    0,
    8,
    [
      LEAF_HASHES[1],
      "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
      "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
    ] as Array<string>,
  ],
  [
    5,
    8,
    [LEAF_HASHES[4], "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0", ROOTS[4]] as Array<string>,
  ],
  [2, 3, [ROOTS[2]] as Array<string>],
  [
    1,
    5,
    [
      LEAF_HASHES[0],
      "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
      LEAF_HASHES[4],
    ] as Array<string>,
  ],
]

const CONSISTENCY: ReadonlyArray<readonly [number, number, ReadonlyArray<string>]> = [
  [1, 1, []],
  [
    1,
    8,
    [
      LEAF_HASHES[1],
      "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
      "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
    ] as Array<string>,
  ],
  [
    6,
    8,
    [
      "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
      "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
      ROOTS[4],
    ] as Array<string>,
  ],
  [2, 5, ["5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e", LEAF_HASHES[4]] as Array<string>],
  [
    6,
    7,
    ["0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a", LEAF_HASHES[6], ROOTS[4]] as Array<string>,
  ],
]

describe("Merkle hashing (RFC 9162 §2.1.1)", () => {
  it("hashes each published leaf as SHA-256(0x00 ‖ leaf)", () => {
    expect(hashes).toEqual(LEAF_HASHES)
  })

  it("hashes a node as SHA-256(0x01 ‖ left ‖ right)", () => {
    expect(Merkle.nodeHash(D(LEAF_HASHES[0] as string), D(LEAF_HASHES[1] as string))).toBe(ROOTS[2])
    expect(Merkle.nodeHash(D(LEAF_HASHES[1] as string), D(LEAF_HASHES[0] as string))).not.toBe(ROOTS[2])
  })

  it("gives the published root for every prefix of the eight leaves, the empty tree included", () => {
    for (let n = 0; n <= 8; n++) expect(Merkle.root(hashes.slice(0, n))).toBe(ROOTS[n])
    expect(Merkle.EMPTY_ROOT).toBe(ROOTS[0])
  })

  it("splits n leaves at the largest power of two below n", () => {
    expect([2, 3, 4, 5, 8, 9, 300].map(Merkle.split)).toEqual([1, 2, 2, 4, 4, 8, 256])
  })
})

describe("Merkle.inclusionPath / consistencyPath (RFC 9162 §2.1.3.1, §2.1.4.1)", () => {
  it.each(INCLUSION)("leaf %i of %i is the published path", (index, size, proof) => {
    expect(Merkle.inclusionPath(index, hashes.slice(0, size))).toEqual(proof)
  })

  it.each(CONSISTENCY)("%i → %i is the published proof", (first, second, proof) => {
    expect(Merkle.consistencyPath(first, hashes.slice(0, second))).toEqual(proof)
  })

  it("refuses a leaf outside the tree and an old size outside 1..n", () => {
    expect(() => Merkle.inclusionPath(8, hashes)).toThrow(RangeError)
    expect(() => Merkle.inclusionPath(-1, hashes)).toThrow(RangeError)
    expect(() => Merkle.consistencyPath(0, hashes)).toThrow(RangeError)
    expect(() => Merkle.consistencyPath(9, hashes)).toThrow(RangeError)
  })
})

interface InclusionProbe {
  readonly file: string
  readonly leafIdx: number
  readonly treeSize: number
  readonly root: string | null
  readonly leafHash: string | null
  readonly proof: ReadonlyArray<string> | null
  readonly wantErr: boolean
}
interface ConsistencyProbe {
  readonly file: string
  readonly size1: number
  readonly size2: number
  readonly root1: string | null
  readonly root2: string | null
  readonly proof: ReadonlyArray<string> | null
  readonly wantErr: boolean
}
const vectors = JSON.parse(readFileSync(new URL("vectors/transparency-dev-merkle.json", import.meta.url), "utf8")) as {
  readonly inclusion: ReadonlyArray<InclusionProbe>
  readonly consistency: ReadonlyArray<ConsistencyProbe>
}

// A leaf or proof hash that is not 32 bytes is refused before any check: it cannot be a
// `Digest`. Some probes put a short placeholder where a root does not matter; roots are compared
// as hex, so a placeholder equals only itself, as a verifier comparing bytes would see it.
const hex = (b64: string | null): Digest.Digest => Buffer.from(b64 ?? "", "base64").toString("hex") as Digest.Digest
const digests = (b64s: ReadonlyArray<string | null>): Array<Digest.Digest> | undefined => {
  const out = b64s.map((b) => Digest.fromBytes(Buffer.from(b ?? "", "base64")))
  return out.every(Either.isRight) ? out.map((d) => d.right) : undefined
}

describe("MerkleProof against the transparency-dev probes", () => {
  it("has the probes, with happy paths and tampered ones", () => {
    expect(vectors.inclusion.length).toBe(98)
    expect(vectors.consistency.length).toBe(98)
  })

  it.each(vectors.inclusion.map((p) => [p.file, p] as const))("inclusion %s", (_, p) => {
    const hashes = digests([p.leafHash, ...(p.proof ?? [])])
    const refused =
      hashes === undefined ||
      Either.isLeft(
        MerkleProof.verifyInclusion(p.leafIdx, p.treeSize, hashes[0] as Digest.Digest, hashes.slice(1), hex(p.root)),
      )
    expect(refused).toBe(p.wantErr)
  })

  it.each(vectors.consistency.map((p) => [p.file, p] as const))("consistency %s", (_, p) => {
    const proof = digests(p.proof ?? [])
    const refused =
      proof === undefined ||
      Either.isLeft(MerkleProof.verifyConsistency(p.size1, p.size2, proof, hex(p.root1), hex(p.root2)))
    expect(refused).toBe(p.wantErr)
  })
})

const leafOf = (i: number): Digest.Digest => Merkle.leafHash(Buffer.from(`leaf ${i}`, "utf8"))
const many = Array.from({ length: 300 }, (_, i) => leafOf(i))

/** The digest with one bit of byte `at` flipped. */
const flip = (d: Digest.Digest, at: number): Digest.Digest => {
  const bytes = Buffer.from(Digest.toBytes(d))
  bytes[at % 32] = (bytes[at % 32] as number) ^ 1
  return Either.getOrThrow(Digest.fromBytes(bytes))
}

const sizes = FastCheck.integer({ min: 1, max: 300 }).chain((n) =>
  FastCheck.tuple(FastCheck.constant(n), FastCheck.integer({ min: 1, max: n }), FastCheck.nat()),
)

describe("MerkleProof properties", () => {
  it("every inclusion proof verifies, and one flipped bit in the proof, leaf or root fails it", () => {
    FastCheck.assert(
      FastCheck.property(sizes, ([n, m, r]) => {
        const leaves = many.slice(0, n)
        const index = m - 1
        const proof = Merkle.inclusionPath(index, leaves)
        const root = Merkle.root(leaves)
        expect(MerkleProof.verifyInclusion(index, n, leaves[index] as Digest.Digest, proof, root)).toEqual(Either.void)
        expect(
          Either.isLeft(MerkleProof.verifyInclusion(index, n, flip(leaves[index] as Digest.Digest, r), proof, root)),
        ).toBe(true)
        expect(
          Either.isLeft(MerkleProof.verifyInclusion(index, n, leaves[index] as Digest.Digest, proof, flip(root, r))),
        ).toBe(true)
        if (proof.length > 0) {
          const at = r % proof.length
          const bent = proof.map((h, i) => (i === at ? flip(h, r) : h))
          expect(Either.isLeft(MerkleProof.verifyInclusion(index, n, leaves[index] as Digest.Digest, bent, root))).toBe(
            true,
          )
          expect(
            Either.isLeft(MerkleProof.verifyInclusion(index, n, leaves[index] as Digest.Digest, proof.slice(1), root)),
          ).toBe(true)
        }
      }),
      { numRuns: 200 },
    )
  })

  it("every consistency proof m → n verifies, and one flipped bit fails it", () => {
    FastCheck.assert(
      FastCheck.property(sizes, ([n, m, r]) => {
        const proof = Merkle.consistencyPath(m, many.slice(0, n))
        const first = Merkle.root(many.slice(0, m))
        const second = Merkle.root(many.slice(0, n))
        expect(MerkleProof.verifyConsistency(m, n, proof, first, second)).toEqual(Either.void)
        expect(Either.isLeft(MerkleProof.verifyConsistency(m, n, proof, flip(first, r), second))).toBe(true)
        expect(Either.isLeft(MerkleProof.verifyConsistency(m, n, proof, first, flip(second, r)))).toBe(true)
        if (proof.length > 0) {
          const at = r % proof.length
          const bent = proof.map((h, i) => (i === at ? flip(h, r) : h))
          expect(Either.isLeft(MerkleProof.verifyConsistency(m, n, bent, first, second))).toBe(true)
        }
      }),
      { numRuns: 200 },
    )
  })

  it("a kept empty tree is extended by every tree with no proof; a wrong root or a proof is refused", () => {
    FastCheck.assert(
      FastCheck.property(FastCheck.integer({ min: 0, max: 300 }), FastCheck.nat(), (n, r) => {
        const second = Merkle.root(many.slice(0, n))
        // The proof verifyConsistency refuses from 0 (as the transparency-dev vectors do), verifyExtends accepts.
        expect(Either.isLeft(MerkleProof.verifyConsistency(0, n, [], Merkle.EMPTY_ROOT, second))).toBe(true)
        expect(MerkleProof.verifyExtends(0, n, [], Merkle.EMPTY_ROOT, second)).toEqual(Either.void)
        expect(Either.isLeft(MerkleProof.verifyExtends(0, n, [], flip(Merkle.EMPTY_ROOT, r), second))).toBe(true)
        expect(Either.isLeft(MerkleProof.verifyExtends(0, n, [Merkle.EMPTY_ROOT], Merkle.EMPTY_ROOT, second))).toBe(
          true,
        )
      }),
      { numRuns: 100 },
    )
    const zero = MerkleProof.verifyExtends(0, 0, [], Merkle.EMPTY_ROOT, flip(Merkle.EMPTY_ROOT, 3))
    expect(Either.isLeft(zero)).toBe(true)
    expect(Either.isLeft(MerkleProof.verifyExtends(0, -1, [], Merkle.EMPTY_ROOT, Merkle.EMPTY_ROOT))).toBe(true)
  })

  it("from a kept size above 0, verifyExtends is verifyConsistency", () => {
    FastCheck.assert(
      FastCheck.property(sizes, ([n, m, r]) => {
        const proof = Merkle.consistencyPath(m, many.slice(0, n))
        const first = Merkle.root(many.slice(0, m))
        const second = Merkle.root(many.slice(0, n))
        expect(MerkleProof.verifyExtends(m, n, proof, first, second)).toEqual(Either.void)
        expect(Either.isLeft(MerkleProof.verifyExtends(m, n, proof, flip(first, r), second))).toBe(true)
      }),
      { numRuns: 100 },
    )
  })

  it("a proof for one leaf does not verify another leaf at the same index or the same leaf at another index", () => {
    const proof = Merkle.inclusionPath(5, many.slice(0, 13))
    const root = Merkle.root(many.slice(0, 13))
    expect(Either.isRight(MerkleProof.verifyInclusion(5, 13, many[5] as Digest.Digest, proof, root))).toBe(true)
    expect(Either.isLeft(MerkleProof.verifyInclusion(5, 13, many[6] as Digest.Digest, proof, root))).toBe(true)
    expect(Either.isLeft(MerkleProof.verifyInclusion(4, 13, many[5] as Digest.Digest, proof, root))).toBe(true)
  })

  it("says why a proof fails", () => {
    const result = MerkleProof.verifyInclusion(3, 3, many[0] as Digest.Digest, [], Merkle.EMPTY_ROOT)
    expect(Either.isLeft(result) && result.left._tag).toBe("ProofInvalid")
    expect(Either.isLeft(result) && result.left.message).toBe("invalid inclusion proof: leaf 3 is not in a tree of 3")
  })
})
